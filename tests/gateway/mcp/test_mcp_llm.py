"""The MCP server with a fake LLM behind it: cancelling a call (the client's
notifications/cancelled, its connection closing, at 2026-07-28 its closed response
stream) stops the chat and its LLM call; a network that fails is a tool error; the network's time budget applies."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp.shared.exceptions import MCPError

from tests.fakes.fake_llm import FakeLlmServer, Reply
from tests.support import load
from tests.support.fake_thread import FakeInThread, Rig, override_env
from tests.support.mcp import REGISTRIES, mcp_client
from tests.support.servers import start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

HEADERS = {"MCP-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"}


def _call(text: str, request_id: int = 7, progress: bool = False) -> dict[str, object]:
    params: dict[str, object] = {"name": "echo", "arguments": {"user_message": {"text": text}}}
    if progress:
        params["_meta"] = {"progressToken": "t"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _settled(fake: FakeLlmServer, cancelled_before: int) -> bool:
    return fake.handlers_cancelled > cancelled_before and fake.open_connections == 0


@pytest.mark.parametrize("how", ["sdk-cancel", "modern-sdk-cancel", "notification", "disconnect", "modern-close"])
def test_cancelling_a_call_closes_its_llm_connection(rig: Rig, how: str) -> None:
    fake, server = rig
    fake.rule = load.fixed_rule(Reply.stall(60.0))
    before_requests, before_cancelled = fake.request_count, fake.handlers_cancelled

    async def sdk_cancel(mode: str) -> None:
        # The handshake-era client sends notifications/cancelled; the one pinned to 2026-07-28
        # cancels by closing the call's response stream.
        async with mcp_client(server, key=None, mode=mode) as client:
            call = asyncio.create_task(client.call_tool("echo", {"user_message": {"text": "wait"}}))
            assert await _until(lambda: fake.request_count > before_requests)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
            # Leave only once the server has answered the cancelled POST: the SDK's
            # transport fails its teardown if a response lands while it closes.
            assert await _until(lambda: _settled(fake, before_cancelled))
            # Still a guess, not a wait: the SDK shows no sign of having had the cancelled
            # POST's answer, and the server does not log it (the MCP facade may give one).
            await asyncio.sleep(0.5)

    async def by_notification() -> None:
        async with aiohttp.ClientSession(headers={**HEADERS, "Mcp-Session-Id": "s1"}) as session:
            url = f"{server.http_base}/mcp"
            post = asyncio.create_task(session.post(url, json=_call("wait", 41)))
            assert await _until(lambda: fake.request_count > before_requests)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}}
            async with session.post(url, json=cancel) as reply:
                assert reply.status == 202
            response = await post
            body = await response.json()
            assert body["error"]["code"] == -32800 and body["id"] == 41

    async def by_disconnect() -> None:
        async with aiohttp.ClientSession(headers=HEADERS) as session:
            post = asyncio.create_task(session.post(f"{server.http_base}/mcp", json=_call("wait", progress=True)))
            assert await _until(lambda: fake.request_count > before_requests)
            post.cancel()  # aiohttp drops the connection
            with contextlib.suppress(asyncio.CancelledError):
                await post

    async def by_closing_a_modern_stream() -> None:
        # 2026-07-28: closing the request's own response is its cancellation (no notification).
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        body = _call("wait", 8)
        body["params"]["_meta"] = meta  # type: ignore[index]
        headers = {"MCP-Protocol-Version": "2026-07-28", "Accept": "application/json, text/event-stream",
                   "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        async with aiohttp.ClientSession(headers=headers) as session:
            post = asyncio.create_task(session.post(f"{server.http_base}/mcp", json=body))
            assert await _until(lambda: fake.request_count > before_requests)
            post.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await post

    scenarios: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
        "sdk-cancel": functools.partial(sdk_cancel, "legacy"),
        "notification": by_notification,
        "disconnect": by_disconnect,
        "modern-close": by_closing_a_modern_stream,
        "modern-sdk-cancel": functools.partial(sdk_cancel, "2026-07-28"),
    }
    scenario = scenarios[how]
    try:
        asyncio.run(scenario())
        assert load.wait_until(lambda: _settled(fake, before_cancelled), within=10), (
            fake.handlers_cancelled, fake.open_connections)
    finally:
        fake.rule = None


def test_a_failing_network_is_a_tool_error(rig: Rig) -> None:
    fake, server = rig
    fake.rule = load.fixed_rule(Reply.error(400, "the model refuses"))

    async def scenario() -> None:
        async with mcp_client(server, key=None) as client:
            result = await client.call_tool("echo", {"user_message": {"text": "hello"}})
            assert result.is_error, result
            assert result.structured_content is None
            text = result.content[0].text
            assert text.startswith("Failed to execute tool echo:") and "the model refuses" in text, text

    try:
        asyncio.run(scenario())
    finally:
        fake.rule = None


def test_after_all_that_a_call_still_works(rig: Rig) -> None:
    _, server = rig

    async def scenario() -> None:
        async with mcp_client(server, key=None) as client:
            result = await client.call_tool("echo", {"user_message": {"text": "still here"}})
            assert not result.is_error and result.content[0].text == "still here", result

    asyncio.run(scenario())


async def _until(predicate: object, within: float = 10.0) -> bool:
    check = predicate if callable(predicate) else (lambda: bool(predicate))
    return await asyncio.to_thread(load.wait_until, check, within)


def test_the_network_time_budget_and_the_concurrency_limit_apply(tmp_path: Path) -> None:
    """neuro-san let /mcp bypass AGENT_MAX_CONCURRENT_REQUESTS; here a call is a chat like any other."""
    network = (REGISTRIES / "echo.hocon").read_text().rstrip()
    assert network.endswith("}")
    (tmp_path / "slow.hocon").write_text(network[:-1] + '    "request_timeout_seconds": 1,\n}\n')
    (tmp_path / "manifest.hocon").write_text('{"slow.hocon": true}\n')
    with FakeInThread() as fake:
        fake.rule = load.fixed_rule(Reply.stall(30.0))
        env = {**override_env(fake), "AGENT_MAX_CONCURRENT_REQUESTS": "1",
               "AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS": "0.2"}
        with start_server(manifest=tmp_path / "manifest.hocon", env=env, http=True) as server:

            async def scenario() -> None:
                async with mcp_client(server, key=None) as client:
                    started = time.monotonic()
                    first = asyncio.create_task(client.call_tool("slow", {"user_message": {"text": "hi"}}))
                    assert await _until(lambda: fake.request_count > 0)
                    # A server at its cap refuses the request (HTTP 503, JSON-RPC -32002), as REST does.
                    with pytest.raises(MCPError, match="limit of 1 concurrent chats") as refused:
                        await client.call_tool("slow", {"user_message": {"text": "me too"}})
                    assert refused.value.error.code == -32002
                    result = await first
                    assert result.is_error and result.content[0].text.startswith("Timeout for tool slow"), result
                    assert time.monotonic() - started < 10
                # A quiet SSE stream gets keep-alive comments (the gateway's keepalive setting).
                async with aiohttp.ClientSession(headers=HEADERS) as session:
                    call = _call("hi", progress=True)
                    call["params"]["name"] = "slow"  # type: ignore[index]
                    async with session.post(f"{server.http_base}/mcp", json=call) as reply:
                        raw = await reply.read()
                assert b"\n: keep-alive\n" in b"\n" + raw and b"Timeout for tool slow" in raw, raw[-500:]

            asyncio.run(scenario())
