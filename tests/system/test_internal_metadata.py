"""Internal metadata keys are never taken from a client (issue 33, items 1 and 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import grpc
import httpx
import pytest
from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc

from tests.support.load import standalone_gateway
from tests.support.servers import ROOT, ServerProcess, start_server

pytestmark = pytest.mark.slow

SMUGGLED = {"Grpc-Metadata-neuro-san-public-directory": "true"}


@pytest.fixture(scope="module")
def secured() -> Iterator[ServerProcess]:
    with start_server(http=True, env={"AGENT_API_KEYS": "the-key"}) as server:
        yield server


def test_a_smuggled_public_directory_header_gets_401_on_every_http_front_end(secured: ServerProcess) -> None:
    base = secured.http_base
    assert httpx.get(f"{base}/api/v1/list", headers=SMUGGLED, timeout=10).status_code == 401
    assert httpx.get(f"{base}/api/v1/hello_world/function", headers=SMUGGLED, timeout=10).status_code == 401
    mcp_headers = {**SMUGGLED, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    client = {"name": "t", "version": "1"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}}
    assert httpx.post(f"{base}/mcp", json=init, headers=mcp_headers, timeout=10).status_code == 401
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert httpx.post(f"{base}/mcp", json=listing, headers=mcp_headers, timeout=10).status_code == 401
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}
    headers = {**SMUGGLED, "A2A-Version": "1.0"}
    assert httpx.post(f"{base}/a2a/hello_world", json=send, headers=headers, timeout=10).status_code == 401
    assert httpx.get(f"{base}/v1/models", headers=SMUGGLED, timeout=10).status_code == 401
    chat = {"model": "hello_world", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(f"{base}/v1/chat/completions", json=chat, headers=SMUGGLED, timeout=10).status_code == 401
    response = {"model": "hello_world", "input": "hi"}
    assert httpx.post(f"{base}/v1/responses", json=response, headers=SMUGGLED, timeout=10).status_code == 401
    run = {"threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [], "forwardedProps": {},
           "messages": [{"id": "m", "role": "user", "content": "hi"}]}
    assert httpx.post(f"{base}/ag-ui/hello_world", json=run, headers=SMUGGLED, timeout=10).status_code == 401


def test_raw_grpc_with_internal_metadata_is_not_trusted(secured: ServerProcess) -> None:
    with grpc.insecure_channel(secured.grpc_target) as channel:
        stub = concierge_pb2_grpc.ConciergeServiceStub(channel)
        with pytest.raises(grpc.RpcError) as failure:
            stub.List(concierge_pb2.ConciergeRequest(), metadata=[("neuro-san-public-directory", "true")], timeout=10)
        assert failure.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_x_api_key_works_over_http_as_over_grpc(secured: ServerProcess) -> None:
    reply = httpx.get(f"{secured.http_base}/api/v1/list", headers={"X-Api-Key": "the-key"}, timeout=10)
    assert reply.status_code == 200
    assert reply.json()["agents"]


def test_the_header_mapping_never_yields_a_gateway_owned_key() -> None:
    from gateway.host.metadata import HeaderMapper

    mapper = HeaderMapper(["user_id", "agent-name", "x-neuro-san-client", "neuro-san-lean-stream"])
    headers = {"Grpc-Metadata-agent-name": "calc", "Grpc-Metadata-neuro-san-public-directory": "true",
               "Grpc-Metadata-neuro-san-private-named-only": "false", "Grpc-Metadata-x-neuro-san-client": "1.2.3.4",
               "Grpc-Metadata-neuro-san-lean-stream": "inputs", "neuro-san-lean-stream": "inputs",
               "agent-name": "calc", "User_Id": "u1"}
    assert mapper.to_metadata(headers) == [("user_id", "u1")]


def test_the_gateway_s_own_internal_keys_hold_over_the_grpc_hop() -> None:
    """With the gateway calling over gRPC (AGENT_GATEWAY_INVOKER=grpc), its own internal keys must
    still be believed (they carry the process's token), while a raw gRPC client's are not."""
    with start_server(http=True, env={"AGENT_API_KEYS": "the-key", "AGENT_GATEWAY_INVOKER": "grpc"}) as server:
        card = httpx.get(f"{server.http_base}/a2a/hello_world/.well-known/agent-card.json", timeout=10)
        assert card.status_code == 200, card.text
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = concierge_pb2_grpc.ConciergeServiceStub(channel)
            with pytest.raises(grpc.RpcError) as failure:
                stub.List(concierge_pb2.ConciergeRequest(),
                          metadata=[("neuro-san-public-directory", "true"), ("neuro-san-internal-token", "guess")],
                          timeout=10)
            assert failure.value.code() == grpc.StatusCode.UNAUTHENTICATED


SHARED = {"AGENT_INTERNAL_TOKEN": "s" * 40}


def test_a_standalone_gateway_is_believed_only_with_the_shared_token() -> None:
    """A standalone gateway is another process: its A2A card (an internal public-directory call)
    is refused by a server with keys on, unless both share AGENT_INTERNAL_TOKEN."""
    card = "/a2a/hello_world/.well-known/agent-card.json"
    with start_server(env={"AGENT_API_KEYS": "the-key", **SHARED}) as server:
        with standalone_gateway([server.grpc_target]) as stranger:
            assert httpx.get(stranger.http_base + card, timeout=10).status_code == 401
        with standalone_gateway([server.grpc_target], env=SHARED) as trusted:
            reply = httpx.get(trusted.http_base + card, timeout=10)
            assert reply.status_code == 200, reply.text
            # The secret never comes from an HTTP client: the edge drops the header.
            smuggled = {"Grpc-Metadata-neuro-san-internal-token": SHARED["AGENT_INTERNAL_TOKEN"]}
            assert httpx.get(trusted.http_base + "/api/v1/list", headers=smuggled, timeout=10).status_code == 401


def test_a_short_shared_token_is_refused_at_start() -> None:
    for command in (["gateway", "--target", "127.0.0.1:1", "--port", "0"], ["serve", "--port", "0", "--no-http"]):
        run = subprocess.run([sys.executable, "-m", "neuro_san.cli.main", *command], cwd=ROOT, timeout=60,
                             capture_output=True, text=True, env={**os.environ, "AGENT_INTERNAL_TOKEN": "short"})
        assert run.returncode == 2, run.stderr
        assert "AGENT_INTERNAL_TOKEN must be at least 32 characters" in run.stderr
