"""A2A's gRPC binding on the gRPC port of a real ``neuro-san serve``, driven by the official
a2a-sdk client over its gRPC transport (and its generated stub for the refusals): the network
by ``tenant``, the cards' gRPC interface, the caller's key, one task store with JSON-RPC."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import httpx
import pytest
from a2a.client import Client, ClientCallContext, ClientConfig, create_client
from a2a.types import GetTaskRequest, SendMessageRequest, TaskState, a2a_pb2, a2a_pb2_grpc
from a2a.utils.errors import TaskNotFoundError
from google.rpc import error_details_pb2, status_pb2

from gateway.a2a.grpc_binding import SERVICE, STREAMING_METHODS, UNARY_METHODS
from tests.a2a_support import a2a_client, as_dict, user_message
from tests.support.mcp import ADMIN_KEY, USER_KEY, write_registry
from tests.support.servers import ROOT, ServerProcess, start_server

#: Takes seconds (starts servers): not in `make test-fast`.
pytestmark = pytest.mark.slow

LIMITED_KEY = "a2a-grpc-limited-key"  # one chat an hour


@asynccontextmanager
async def grpc_client(card_url: str, streaming: bool = False) -> AsyncIterator[Client]:
    """The SDK client for the network whose card is at ``card_url``, speaking gRPC only: it
    must find the gRPC interface (and its tenant) in the card."""
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=["GRPC"],
                              grpc_channel_factory=grpc.aio.insecure_channel)
        client = await create_client(card_url, config)
        try:
            yield client
        finally:
            await client.close()


def _bearer(key: str) -> ClientCallContext:
    return ClientCallContext(service_parameters={"Authorization": f"Bearer {key}"})


async def _send(client: Client, text: str, context: ClientCallContext | None = None) -> a2a_pb2.Task:
    events = [e async for e in client.send_message(SendMessageRequest(message=user_message(text)), context=context)]
    return events[-1].task


async def _stub_send(
    target: str, tenant: str, metadata: tuple[tuple[str, str], ...] = (), version: str | None = "1.0"
) -> a2a_pb2.SendMessageResponse:
    """SendMessage through the SDK's generated stub, to see the raw gRPC status (with the
    ``A2A-Version`` the SDK client sends, unless ``metadata`` says otherwise)."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        request = a2a_pb2.SendMessageRequest(tenant=tenant, message=user_message("6*7"))
        sent = (("a2a-version", version), *metadata) if version is not None else metadata
        return await stub.SendMessage(request, metadata=sent, timeout=30)


def test_our_method_table_is_the_sdks_service() -> None:
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
    assert service.full_name == SERVICE
    assert {m.name for m in service.methods if m.server_streaming} == STREAMING_METHODS
    assert {m.name for m in service.methods if not m.server_streaming} == UNARY_METHODS


def test_each_card_lists_the_grpc_interface_with_its_network_as_tenant(server: ServerProcess) -> None:
    base = server.http_base
    card = httpx.get(f"{base}/a2a/math_guy/.well-known/agent-card.json", timeout=10).json()
    interfaces = [(i["protocolBinding"], i["url"], i.get("tenant", "")) for i in card["supportedInterfaces"]]
    assert ("GRPC", server.grpc_target, "math_guy") in interfaces
    assert interfaces[0] == ("JSONRPC", f"{base}/a2a/math_guy", "")  # still the preferred one
    directory = httpx.get(f"{base}/.well-known/agent-card.json", timeout=10).json()
    # Server-wide: every network, none preferred (each request names its tenant).
    assert [(i["protocolBinding"], i["url"], i.get("tenant", "")) for i in directory["supportedInterfaces"]] == [
        ("JSONRPC", f"{base}/a2a", ""), ("GRPC", server.grpc_target, "")]


def test_send_by_tenant_over_grpc_then_read_the_task_over_jsonrpc(server: ServerProcess) -> None:
    card_url = f"{server.http_base}/a2a/math_guy"

    async def scenario() -> None:
        async with grpc_client(card_url) as client:
            task = await _send(client, "6*7")
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert "42" in task.artifacts[0].parts[0].text
            assert as_dict(task.artifacts[0].metadata)["neuro_san"]["sly_data"] == {"equals": 42}
            assert (await client.get_task(GetTaskRequest(id=task.id))).id == task.id
        async with a2a_client(card_url, streaming=False) as jsonrpc:  # one task store behind both bindings
            same = await jsonrpc.get_task(GetTaskRequest(id=task.id))
        assert same.status.state == TaskState.TASK_STATE_COMPLETED and "42" in same.artifacts[0].parts[0].text
        async with grpc_client(f"{server.http_base}/a2a/echo") as elsewhere:
            with pytest.raises(TaskNotFoundError):  # a task belongs to the network (tenant) that ran it
                await elsewhere.get_task(GetTaskRequest(id=task.id))

    asyncio.run(scenario())


def test_streaming_over_grpc(server: ServerProcess) -> None:
    async def scenario() -> None:
        async with grpc_client(f"{server.http_base}/a2a/hello_world", streaming=True) as client:
            events = [e async for e in client.send_message(SendMessageRequest(message=user_message("hello")))]
        updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
        assert len(updates) > 1 and updates[-1].last_chunk  # token chunks, then the whole answer
        assert updates[-1].artifact.parts[0].text.startswith("Announcement:")
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())


def test_no_unknown_or_private_tenant_is_refused_clearly(server: ServerProcess) -> None:
    async def status_of(tenant: str) -> grpc.aio.AioRpcError:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _stub_send(server.grpc_target, tenant)
        return caught.value

    async def scenario() -> None:
        missing = await status_of("")
        assert missing.code() == grpc.StatusCode.INVALID_ARGUMENT and "tenant" in (missing.details() or "")
        unknown = await status_of("nobody")
        assert unknown.code() == grpc.StatusCode.NOT_FOUND and "nobody" in (unknown.details() or "")
        # deep/math_guy is private (public: false): over A2A it is not there without a key naming it.
        private = await status_of("deep/math_guy")
        assert private.code() == grpc.StatusCode.NOT_FOUND
        answered = await _stub_send(server.grpc_target, "/math_guy")  # a tenant written as a path works too
        assert "42" in answered.task.artifacts[0].parts[0].text

    asyncio.run(scenario())


def _error_info(error: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    """The ``google.rpc.ErrorInfo`` of a rich gRPC status (every A2A error carries one)."""
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert raw, f"no google.rpc.Status in the trailers of {error.code()}: {error.details()}"
    for detail in status_pb2.Status.FromString(raw).details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info
    raise AssertionError("no google.rpc.ErrorInfo in the status details")


def test_a2a_version_is_checked_and_refusals_carry_error_info(server: ServerProcess) -> None:
    """As JSON-RPC and HTTP+JSON: an unserved A2A-Version (none means 0.3) is
    VersionNotSupported, UNIMPLEMENTED on gRPC (A2A 1.0's mapping), with its ErrorInfo; the
    missing-tenant refusal carries one too."""

    async def refused(tenant: str, version: str | None) -> grpc.aio.AioRpcError:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _stub_send(server.grpc_target, tenant, version=version)
        return caught.value

    async def scenario() -> None:
        for version in ("99.0", "0.3", None):
            error = await refused("math_guy", version)
            assert error.code() == grpc.StatusCode.UNIMPLEMENTED, (version, error.code(), error.details())
            assert "version" in (error.details() or "").lower()
            info = _error_info(error)
            assert (info.reason, info.domain) == ("VERSION_NOT_SUPPORTED", "a2a-protocol.org"), info
        answered = await _stub_send(server.grpc_target, "math_guy", version="1.0")
        assert "42" in answered.task.artifacts[0].parts[0].text
        missing = await refused("", "1.0")
        assert missing.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert _error_info(missing).domain == "a2a-protocol.org"

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder: Path = tmp_path_factory.mktemp("a2a-grpc-keys")
    manifest = write_registry(folder)
    with (folder / "keys.yaml").open("a") as keys:
        keys.write(f'  - name: limited\n    key: "{LIMITED_KEY}"\n    agents: ["*"]\n'
                   "    limits: {chats: 1, period_seconds: 3600}\n")
    env = {"AGENT_TOOL_PATH": str(ROOT / "neuro_san" / "coded_tools"), "AGENT_API_KEYS_FILE": str(folder / "keys.yaml")}
    with start_server(manifest=manifest, env=env, http=True) as running:
        yield running


def test_with_api_keys_the_callers_key_decides(keyed: ServerProcess) -> None:
    target = keyed.grpc_target

    async def scenario() -> None:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _stub_send(target, "math_guy")
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _stub_send(target, "math_guy", (("authorization", "Bearer wrong"),))
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        async with grpc_client(f"{keyed.http_base}/a2a/math_guy") as client:
            task = await _send(client, "6*7", _bearer(USER_KEY))
            assert "42" in task.artifacts[0].parts[0].text
            with pytest.raises(TaskNotFoundError):  # tasks are scoped to the key that made them
                await client.get_task(GetTaskRequest(id=task.id), context=_bearer(ADMIN_KEY))
        headers = {"Authorization": f"Bearer {USER_KEY}"}
        async with a2a_client(f"{keyed.http_base}/a2a/math_guy", streaming=False, headers=headers) as jsonrpc:
            assert (await jsonrpc.get_task(GetTaskRequest(id=task.id))).id == task.id  # same key, same owner
        # The private network: there for the key that names it (x-api-key works too), not for the other.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _stub_send(target, "deep/math_guy", (("authorization", f"Bearer {USER_KEY}"),))
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        admin = await _stub_send(target, "deep/math_guy", (("x-api-key", ADMIN_KEY),))
        assert admin.task.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())


def test_a_chat_the_service_refuses_is_answered_with_its_status(keyed: ServerProcess) -> None:
    async def scenario() -> None:
        limited = (("authorization", f"Bearer {LIMITED_KEY}"),)
        first = await _stub_send(keyed.grpc_target, "math_guy", limited)
        assert first.task.status.state == TaskState.TASK_STATE_COMPLETED
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _stub_send(keyed.grpc_target, "math_guy", limited)
        refused = caught.value
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert dict(refused.trailing_metadata() or ()).get("retry-after", "").isdigit()

    asyncio.run(scenario())


def test_agent_a2a_enable_false_turns_off_every_binding_and_the_cards() -> None:
    """``AGENT_A2A_ENABLE=false``: no JSON-RPC, REST or gRPC binding and no card; the rest
    of the house (REST, MCP) serves on."""
    with start_server(http=True, env={"AGENT_A2A_ENABLE": "false"}) as off:
        with httpx.Client(base_url=f"http://127.0.0.1:{off.http_port}", timeout=10) as http:
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"tenant": "echo", "id": "t"}}
            assert http.post("/a2a/echo", json=rpc, headers={"A2A-Version": "1.0"}).status_code == 404
            assert http.post("/a2a", json=rpc, headers={"A2A-Version": "1.0"}).status_code == 404
            assert http.get("/a2a/echo/rest/tasks", headers={"A2A-Version": "1.0"}).status_code == 404
            assert http.get("/a2a/echo/.well-known/agent-card.json").status_code == 404
            assert http.get("/.well-known/agent-card.json").status_code == 404
            assert http.get("/api/v1/list").status_code == 200
            mcp = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            headers={"MCP-Protocol-Version": "2025-06-18",
                                     "Accept": "application/json, text/event-stream"})
            assert mcp.status_code == 200
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            asyncio.run(_stub_send(off.grpc_target, "echo"))
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
