"""API keys and per-agent access, on gRPC and through the HTTP gateway."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import grpc
import pytest
from neuro_san.api.grpc import agent_pb2, concierge_pb2

from tests.support import grpc_calls as calls
from tests.support.servers import ServerProcess, start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

KEYS = {
    "keys": [
        {"name": "everyone", "key": "key-for-public-networks", "agents": ["*"]},
        {"name": "hello-only", "key": "key-for-hello-world-only", "agents": ["hello_world"]},
        {"name": "deep", "key": "key-for-deep-networks", "agents": ["*", "deep/*"]},
    ]
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    path: Path = tmp_path_factory.mktemp("keys") / "keys.json"
    path.write_text(json.dumps(KEYS))
    with start_server(env={"AGENT_API_KEYS_FILE": str(path)}, http=True) as server:
        yield server


def _bearer(key: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {key}")]


def _function(channel: grpc.Channel, agent: str, metadata: list[tuple[str, str]]) -> grpc.StatusCode:
    call = channel.unary_unary(
        calls.path(None, "Function"),
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=lambda b: b,
    )
    try:
        call(agent_pb2.FunctionRequest(), metadata=[("agent-name", agent), *metadata], timeout=5)
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def test_grpc_credentials(secured: ServerProcess) -> None:
    with grpc.insecure_channel(secured.grpc_target) as channel:
        assert _function(channel, "echo", []) == grpc.StatusCode.UNAUTHENTICATED
        assert _function(channel, "echo", _bearer("wrong")) == grpc.StatusCode.UNAUTHENTICATED
        assert _function(channel, "echo", _bearer("key-for-public-networks")) == grpc.StatusCode.OK
        assert _function(channel, "echo", [("x-api-key", "key-for-public-networks")]) == grpc.StatusCode.OK
        # Per-agent rules.
        assert _function(channel, "hello_world", _bearer("key-for-hello-world-only")) == grpc.StatusCode.OK
        assert _function(channel, "echo", _bearer("key-for-hello-world-only")) == grpc.StatusCode.PERMISSION_DENIED
        # A private network is neither callable nor listed without access to it.
        assert _function(channel, "deep/math_guy", _bearer("key-for-public-networks")) == grpc.StatusCode.NOT_FOUND
        assert _function(channel, "deep/math_guy", _bearer("key-for-deep-networks")) == grpc.StatusCode.OK

        def listed(key: str) -> list[str]:
            call = channel.unary_unary(
                calls.CONCIERGE,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=concierge_pb2.ConciergeResponse.FromString,
            )
            response = call(concierge_pb2.ConciergeRequest(), metadata=_bearer(key), timeout=5)
            return [a.agent_name for a in response.agents]

        assert "deep/math_guy" not in listed("key-for-public-networks")
        assert "deep/math_guy" in listed("key-for-deep-networks")
        assert listed("key-for-hello-world-only") == ["hello_world"]
        chat = calls.streaming_chat(channel, "echo", calls.chat_request("hi"), qualified=True,
                                    metadata=_bearer("key-for-public-networks"))
        assert chat[-1].response.text == "hi"


def test_http_credentials(secured: ServerProcess) -> None:
    async def run() -> dict[str, int]:
        results = {}
        async with aiohttp.ClientSession(secured.http_base) as session:
            for label, headers, path in [
                ("none", {}, "/api/v1/echo/function"),
                ("wrong", {"Authorization": "Bearer nope"}, "/api/v1/echo/function"),
                ("right", {"Authorization": "Bearer key-for-public-networks"}, "/api/v1/echo/function"),
                ("denied", {"Authorization": "Bearer key-for-hello-world-only"}, "/api/v1/echo/function"),
                ("private", {"Authorization": "Bearer key-for-public-networks"}, "/api/v1/deep/math_guy/function"),
            ]:
                async with session.get(path, headers=headers) as response:
                    body = await response.json()
                    results[label] = response.status
                    if response.status != 200:
                        assert body["message"], body
        return results

    assert asyncio.run(run()) == {"none": 401, "wrong": 401, "right": 200, "denied": 403, "private": 404}
