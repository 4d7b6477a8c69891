"""MCP servers as tools of an agent network, against a real MCPServer (FastMCP) server (the
official SDK, Streamable HTTP on a free loopback port) and the fake LLM over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from neuro_san.core.messages import ChatMessage, MessageType, origin_str
from neuro_san.runtime.mcp_server_tools import McpClients
from neuro_san.runtime.mcp_servers_info import McpServersInfo
from neuro_san.runtime.mcp_sessions import McpSessions
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, RecordedRequest, Reply, run_with_fake_llm
from tests.support import grpc_calls as calls
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.mcp_server import McpTestServer
from tests.support.runtime import make_host, run_chat
from tests.support.servers import free_port, start_server
from tests.support.waits import until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tool_server() -> Iterator[McpTestServer]:
    with McpTestServer() as running:
        yield running


def _network(fake: FakeLlmServer, tools: list[Any]) -> dict[str, Any]:
    return {
        "llm_config": fake.llm_config(),
        "tools": [{"name": "front", "instructions": "Use the tools.", "tools": tools}],
    }


def _offered(request: RecordedRequest) -> dict[str, Any]:
    """Function name → definition, as the LLM was offered them."""
    return {t["function"]["name"]: t["function"] for t in request.body.get("tools", [])}


def _tool_results(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


def _agent_texts(messages: list[ChatMessage]) -> list[str]:
    return [m.text for m in messages if m.type is MessageType.AGENT]


def _clients(info: McpServersInfo | None = None) -> McpClients:
    return McpClients(info, McpSessions(open_timeout_seconds=5.0))


def test_the_llm_sees_the_server_tools_by_safe_name_and_their_schema(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        clients = _clients()
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=clients)
        assert await run_chat(host, "n", "hi")
        offered = _offered(fake.requests[0])
        assert set(offered) == {"math__add", "echo_text", "fail", "measure", "slow"}
        assert offered["math__add"]["description"] == "Add a and b."
        # The server's inputSchema unchanged (number stays number).
        assert offered["math__add"]["parameters"]["properties"]["a"] == {"title": "A", "type": "number"}
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_call_with_arguments_reaches_the_server_and_its_result_the_llm(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        clients = _clients()
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=clients)
        fake.enqueue(Reply.calls(FakeToolCall("math__add", {"a": 2, "b": 3})))
        messages = await run_chat(host, "n", "add them", maximal=True)
        assert _tool_results(fake.requests[1]) == ["sum=5"]
        assert messages[-1].text == "sum=5"  # the fake echoes the tool result
        # The stream: Invoking, then Received arguments, the result and Got result (in
        # the order coded tools give them).
        shape = [(MessageType(m.type).name, m.text.split(":")[0], origin_str(m.origin)) for m in messages]
        start = shape.index(("AGENT", "Invoking", "front"))
        assert sorted(shape[start + 1 : start + 4]) == [
            ("AGENT", "Got result", "front.math__add"),
            ("AGENT", "Received arguments", "front.math__add"),
            ("AGENT_TOOL_RESULT", "sum=5", "front"),
        ]
        by_text = {m.text: m for m in messages[start + 1 : start + 4]}
        assert by_text["Got result:"].structure == {"tool_end": True, "tool_output": "sum=5"}
        received = by_text["Received arguments:"].structure or {}
        assert received["tool_args"]["a"] == 2 and received["tool_args"]["origin_str"] == "front.math__add"
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_the_allow_list_limits_the_tools_and_a_missing_name_is_told(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        entry = {"url": tool_server.url, "tools": ["math/add", "echo_text", "nonexistent_tool"]}
        host, factory = make_host({"n": _network(fake, [entry])}, mcp=_clients())
        messages = await run_chat(host, "n", "hi", maximal=True)
        assert set(_offered(fake.requests[0])) == {"math__add", "echo_text"}
        notice = f"agent 'front' of agent network 'n': the following tools cannot be found in {tool_server.url}: "
        assert notice + "['nonexistent_tool']" in _agent_texts(messages)
        human = next(i for i, m in enumerate(messages) if m.type is MessageType.HUMAN)
        assert any(m.text.startswith(notice) for m in messages[:human])
        # The safe name selects too.
        fake.requests.clear()
        by_safe_name = _network(fake, [{"url": tool_server.url, "tools": ["math__add"]}])
        host2, factory2 = make_host({"n": by_safe_name}, mcp=_clients())
        await run_chat(host2, "n", "hi")
        assert set(_offered(fake.requests[0])) == {"math__add"}
        await host.aclose()
        await host2.aclose()
        await factory.aclose()
        await factory2.aclose()

    run_with_fake_llm(body)


def test_a_failing_tool_gives_the_llm_an_error_result(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=_clients())
        fake.enqueue(Reply.calls(FakeToolCall("fail", {"reason": "it broke"})))
        messages = await run_chat(host, "n", "try", maximal=True)
        result = _tool_results(fake.requests[1])[0]
        assert result.startswith("Error: ToolException: ") and "it broke" in result
        assert messages[-1].type is MessageType.AGENT_FRAMEWORK
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_structured_content_reaches_the_llm(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=_clients())
        fake.enqueue(Reply.calls(FakeToolCall("measure", {"text": "abcdefg"})))
        await run_chat(host, "n", "measure")
        text, structured = _tool_results(fake.requests[1])[0].split("\n")
        assert text == "len is 7" and json.loads(structured) == {"len": 7}
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_dead_server_is_reported_quickly_and_the_agent_goes_on(tool_server: McpTestServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}/mcp"

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"n": _network(fake, [dead, tool_server.url])}, mcp=_clients())
        started = time.monotonic()
        messages = await run_chat(host, "n", "hi", maximal=True)
        assert time.monotonic() - started < 5
        notices = [t for t in _agent_texts(messages) if "was unreachable" in t]
        assert len(notices) == 1
        assert notices[0].startswith(f"agent 'front' of agent network 'n': the URL {dead} was unreachable.")
        assert "ConnectError" in notices[0]
        assert "echo_text" in _offered(fake.requests[0])  # the live server's tools are still there
        assert messages[-1].text == "hi"
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_server_dying_between_calls_gives_an_error_result_not_a_hang() -> None:
    async def body(fake: FakeLlmServer) -> None:
        with McpTestServer() as mortal:
            host, factory = make_host({"n": _network(fake, [mortal.url])}, mcp=_clients())
            await run_chat(host, "n", "warm up")
        fake.requests.clear()
        # The tool list is cached, so the model is offered the tool; the call fails fast.
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "x"})))
        started = time.monotonic()
        await run_chat(host, "n", "call")
        assert time.monotonic() - started < 10
        assert _tool_results(fake.requests[1])[0].startswith("Error: ")
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body, within=40)


def test_a_restarted_server_gets_a_new_session_transparently() -> None:
    async def body(fake: FakeLlmServer) -> None:
        first = McpTestServer().start()
        host, factory = make_host({"n": _network(fake, [first.url])}, mcp=_clients())
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "one"})))
        assert (await run_chat(host, "n", "first"))[-1].text == "echo: one"
        await asyncio.to_thread(first.stop)
        with McpTestServer(port=first.port) as second:  # forgets the session: 404
            fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "two"})))
            assert (await run_chat(host, "n", "second"))[-1].text == "echo: two"
            assert second.calls("initialize") and second.calls("tools/call")
            await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body, within=40)


def test_headers_come_from_sly_data_else_from_the_info_file(tool_server: McpTestServer, tmp_path: Path) -> None:
    info_file = tmp_path / "mcp_info.json"
    info_file.write_text(json.dumps({tool_server.url: {"http_headers": {"Authorization": "Bearer from-file"}}}))
    info = McpServersInfo.load(info_file)

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=_clients(info))
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "a"})))
        mark = len(tool_server.seen)
        await run_chat(host, "n", "file")
        from_file = tool_server.seen[mark:]
        assert from_file and all(s.headers.get("authorization") == "Bearer from-file" for s in from_file)
        assert {s.rpc for s in from_file} >= {"initialize", "tools/list", "tools/call"}

        headers = {"http_headers": {tool_server.url: {"Authorization": "Bearer sly-token", "X-Tenant": "t1"}}}
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "b"})))
        mark = len(tool_server.seen)
        await run_chat(host, "n", "sly", sly_data=headers)
        from_sly = tool_server.seen[mark:]
        # Its own session (other headers), and the sly_data headers replace the file's whole.
        assert {s.rpc for s in from_sly} >= {"initialize", "tools/list", "tools/call"}
        assert all(s.headers.get("authorization") == "Bearer sly-token" for s in from_sly)
        assert all(s.headers.get("x-tenant") == "t1" for s in from_sly)
        # The headers never reach the LLM.
        assert "sly-token" not in json.dumps([r.body for r in fake.requests])
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_the_info_file_allow_list_applies_to_a_string_reference(tool_server: McpTestServer, tmp_path: Path) -> None:
    info_file = tmp_path / "mcp_info.hocon"
    info_file.write_text(f'{{ "{tool_server.url}": {{ tools: ["echo_text"] }} }}')

    async def body(fake: FakeLlmServer) -> None:
        mcp = _clients(McpServersInfo.load(info_file))
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=mcp)
        await run_chat(host, "n", "hi")
        assert set(_offered(fake.requests[0])) == {"echo_text"}
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_warm_call_costs_one_request_and_shutdown_ends_the_session(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=_clients())
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "cold"})))
        await run_chat(host, "n", "first")
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "warm"})))
        mark = len(tool_server.seen)
        messages = await run_chat(host, "n", "second")
        assert messages[-1].text == "echo: warm"
        assert [(s.method, s.rpc) for s in tool_server.seen[mark:]] == [("POST", "tools/call")]
        mark = len(tool_server.seen)
        await host.aclose()
        assert [s.method for s in tool_server.seen[mark:]] == ["DELETE"]
        await factory.aclose()

    run_with_fake_llm(body)


def test_cancelling_the_chat_cancels_the_mcp_request(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        tool_server.slow_started.clear()
        tool_server.slow_cancelled.clear()
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=_clients())
        fake.enqueue(Reply.calls(FakeToolCall("slow", {"seconds": 30})))
        chat = asyncio.create_task(run_chat(host, "n", "wait"))
        assert await asyncio.to_thread(tool_server.slow_started.wait, 10)
        chat.cancel()
        with pytest.raises(asyncio.CancelledError):
            await chat
        assert await asyncio.to_thread(tool_server.slow_cancelled.wait, 5)
        # Stopped by the protocol's cancel notification, not by a dropped connection.
        assert tool_server.calls("notifications/cancelled")
        # The session survives for the next chat.
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "after"})))
        assert (await run_chat(host, "n", "again"))[-1].text == "echo: after"
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_call_past_its_timeout_is_an_error_result_and_the_tool_is_stopped(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        tool_server.slow_started.clear()
        tool_server.slow_cancelled.clear()
        clients = McpClients(None, McpSessions(open_timeout_seconds=5.0, call_timeout_seconds=1.0))
        host, factory = make_host({"n": _network(fake, [tool_server.url])}, mcp=clients)
        fake.enqueue(Reply.calls(FakeToolCall("slow", {"seconds": 30})))
        started = time.monotonic()
        await run_chat(host, "n", "wait")
        assert time.monotonic() - started < 10
        result = _tool_results(fake.requests[1])[0]
        assert result.startswith("Error: ") and "timed out" in result, result
        # The SDK tells the server to stop, and the session goes on serving.
        assert await asyncio.to_thread(tool_server.slow_cancelled.wait, 5)
        fake.enqueue(Reply.calls(FakeToolCall("echo_text", {"text": "after"})))
        mark = len(tool_server.seen)
        assert (await run_chat(host, "n", "again"))[-1].text == "echo: after"
        assert [s.rpc for s in tool_server.seen[mark:]] == ["tools/call"]
        await host.aclose()
        await factory.aclose()

    run_with_fake_llm(body)


def test_connectivity_shows_a_string_reference_and_leaves_a_dict_out(tool_server: McpTestServer) -> None:
    async def body(fake: FakeLlmServer) -> None:
        network = {
            "llm_config": fake.llm_config(),
            "tools": [
                {"name": "front", "instructions": "x", "tools": [tool_server.url, "helper"]},
                {
                    "name": "helper",
                    "function": {"description": "helps"},
                    "instructions": "y",
                    "tools": [{"url": tool_server.url, "tools": ["echo_text"]}],
                },
            ],
        }
        host, factory = make_host({"n": network}, mcp=_clients())
        entries, _ = host.connectivity("n")
        assert [(e.origin, tuple(e.tools), e.display_as) for e in entries] == [
            ("front", (tool_server.url, "helper"), "llm_agent"),
            (tool_server.url, (), "external_agent"),
            ("helper", (), "llm_agent"),
        ]
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_served_network_uses_mcp_with_the_info_file_and_ends_sessions_at_shutdown(
    tool_server: McpTestServer, tmp_path: Path
) -> None:
    """Through a real ``neuro-san serve`` process: MCP_SERVERS_INFO_FILE from the
    environment, the call over gRPC, Connectivity, and DELETE when the server stops."""
    (tmp_path / "manifest.hocon").write_text('{ "mcp_net.json": true }')
    network = {"tools": [{"name": "front", "instructions": "Use the tools.", "tools": [tool_server.url]}]}
    (tmp_path / "mcp_net.json").write_text(json.dumps(network))
    info = tmp_path / "mcp_servers.json"
    info.write_text(json.dumps({tool_server.url: {"http_headers": {"Authorization": "Bearer served"}}}))
    with FakeInThread() as fake:
        env = {**override_env(fake), "MCP_SERVERS_INFO_FILE": str(info)}
        with start_server(tmp_path / "manifest.hocon", env=env) as served:
            fake.enqueue(Reply.calls(FakeToolCall("math__add", {"a": 1, "b": 2})))
            mark = len(tool_server.seen)
            with grpc.insecure_channel(served.grpc_target) as channel:
                responses = calls.streaming_chat(channel, "mcp_net", calls.chat_request("add"))
                assert responses[-1].response.text == "sum=3"
                nodes = calls.connectivity(channel, "mcp_net").connectivity_info
                assert [(n.origin, list(n.tools), n.display_as) for n in nodes] == [
                    ("front", [tool_server.url], "llm_agent"),
                    (tool_server.url, [], "external_agent"),
                ]
            seen = tool_server.seen[mark:]
            assert {s.rpc for s in seen} >= {"initialize", "tools/list", "tools/call"}
            assert all(s.headers.get("authorization") == "Bearer served" for s in seen)
            mark = len(tool_server.seen)
        assert [s.method for s in tool_server.seen[mark:]] == ["DELETE"]


def test_tool_lists_expire_and_sessions_are_bounded(tool_server: McpTestServer) -> None:
    async def body() -> None:
        sessions = McpSessions(tools_ttl_seconds=0.3, max_sessions=1, open_timeout_seconds=5.0)
        await sessions.list_tools(tool_server.url, {"X-User": "a"})
        mark = len(tool_server.seen)
        await sessions.list_tools(tool_server.url, {"X-User": "a"})
        assert tool_server.seen[mark:] == []  # fresh: from the cache
        await asyncio.sleep(0.4)  # the behaviour under test: the 0.3 s TTL elapses
        await sessions.list_tools(tool_server.url, {"X-User": "a"})
        assert [(s.method, s.rpc) for s in tool_server.seen[mark:]] == [("POST", "tools/list")]  # same session
        # Another caller's headers get their own session; with room for one, the idle one is closed.
        mark = len(tool_server.seen)
        await sessions.list_tools(tool_server.url, {"X-User": "b"})
        assert await until(lambda: any(s.method == "DELETE" for s in tool_server.seen[mark:]))
        deleted = [s for s in tool_server.seen[mark:] if s.method == "DELETE"]
        assert [s.headers.get("x-user") for s in deleted] == ["a"]
        await sessions.aclose()

    asyncio.run(body())
