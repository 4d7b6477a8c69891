"""The MCP server as MCP hosts use it: the official SDK's client (Streamable HTTP)
against a real ``neuro-san serve`` (offline networks, API keys on)."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.support import load
from tests.support.mcp import ADMIN_KEY, mcp_client, mcp_server
from tests.support.servers import ROOT, ServerProcess, free_port, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with mcp_server(Path(tmp_path_factory.mktemp("mcp"))) as server:
        yield server


def test_initialize_negotiates_the_newest_revision_and_lists_the_public_mcp_networks(served: ServerProcess) -> None:
    async def scenario() -> None:
        async with mcp_client(served, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None and client.server_info.name == "Neuro-san-MCPServer"
            assert client.server_capabilities.tools is not None
            listed = (await client.list_tools()).tools
        by_name = {tool.name: tool for tool in listed}
        # hello_world is public but not MCP-enabled; deep/math_guy is private.
        assert set(by_name) == {"math_guy", "parrot", "tools__math_guy"}
        assert by_name["math_guy"].title is None
        assert by_name["parrot"].title == "echo"  # explicit mcp.name; title is the network
        assert by_name["tools__math_guy"].title == "tools/math_guy"
        assert by_name["math_guy"].description == "I do arithmetic."
        schema = by_name["math_guy"].input_schema
        assert schema["type"] == "object" and "$ref" not in str(schema)
        assert schema["required"] == ["user_message"]

    asyncio.run(scenario())


def test_a_private_tool_is_listed_and_callable_only_with_a_key_that_may_call_it(served: ServerProcess) -> None:
    async def scenario() -> None:
        async with mcp_client(served, key=ADMIN_KEY) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "deep__math_guy" in names
            result = await client.call_tool("deep__math_guy", {"user_message": {"text": "6 * 7"}})
            assert not result.is_error and "42" in result.content[0].text
        async with mcp_client(served) as client:
            with pytest.raises(MCPError, match="Unknown tool: deep__math_guy"):
                await client.call_tool("deep__math_guy", {"user_message": {"text": "6 * 7"}})

    asyncio.run(scenario())


def test_call_math_guy_answers_42_with_sly_data_and_continues_with_the_chat_context(served: ServerProcess) -> None:
    async def scenario() -> None:
        async with mcp_client(served) as client:
            first = await client.call_tool("math_guy", {"user_message": {"text": "6 * 7"}, "sly_data": {"x": 1}})
            assert not first.is_error
            assert first.content[0].type == "text" and first.content[0].text == "The answer is 42."
            structured = first.structured_content
            assert structured is not None and structured["sly_data"] == {"equals": 42}
            context = structured["chat_context"]
            assert context["chat_histories"]
            second = await client.call_tool(
                "math_guy", {"user_message": {"text": "2 + 3"}, "chat_context": context}
            )
            assert not second.is_error and second.content[0].text == "The answer is 5."
            assert second.structured_content is not None
            history = second.structured_content["chat_context"]["chat_histories"][0]["messages"]
            assert [m["text"] for m in history if m["type"] == "HUMAN"] == ["6 * 7", "2 + 3"]
            # A tool is also reachable by its network name (its title), as neuro-san allows.
            by_title = await client.call_tool("tools/math_guy", {"user_message": {"text": "1 + 1"}})
            assert by_title.content[0].text == "The answer is 2."

    asyncio.run(scenario())


def test_progress_notifications_come_while_the_network_works(served: ServerProcess) -> None:
    steps: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, message))

    async def scenario() -> None:
        async with mcp_client(served) as client:
            arguments = {"user_message": {"text": "6 * 7"}}
            result = await client.call_tool("math_guy", arguments, progress_callback=on_progress)
            assert result.content[0].text == "The answer is 42."

    asyncio.run(scenario())
    assert len(steps) >= 3
    assert [p for p, _ in steps] == sorted({p for p, _ in steps})  # strictly increasing
    assert any(message and "calculator" in message and "evaluating" in message for _, message in steps)
    # The front man's answer as it is written: progress messages holding the text so far.
    # (as many as the stream kept apart: deltas waiting for a slow reader join)
    growing = [message for _, message in steps if message and "The answer is 42.".startswith(message)]
    assert growing and growing[-1] == "The answer is 42."
    pairs = zip(growing, growing[1:], strict=False)
    assert all(longer.startswith(shorter) and longer != shorter for shorter, longer in pairs)


def test_unknown_tool_is_a_protocol_error_and_bad_arguments_a_tool_error(served: ServerProcess) -> None:
    async def scenario() -> None:
        async with mcp_client(served) as client:
            with pytest.raises(MCPError, match="Unknown tool: nope") as raised:
                await client.call_tool("nope", {"user_message": {"text": "hi"}})
            assert raised.value.error.code == -32602
            secret = {"user_message": "not an object", "sly_data": {"password": "hunter2"}}
            for arguments, expected in (
                ({"prompt": "hi"}, "unknown argument(s) ['prompt']"),
                ({}, "user_message is required"),
                (secret, "user_message must be an object"),
                ({"user_message": {"text": "x"}, "chat_filter": {"chat_filter_type": "BOGUS"}}, "chat_filter must be"),
            ):
                result = await client.call_tool("math_guy", arguments)
                assert result.is_error, arguments
                text = result.content[0].text
                assert text.startswith("Invalid arguments for tool math_guy:") and expected in text, text
                assert "hunter2" not in text  # neuro-san echoed the whole request, sly_data included

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("key", "headers"),
    [(None, {}), ("wrong-key", {}), ("mcp-user-key", {"Origin": "http://evil.example"})],
    ids=["no-key", "wrong-key", "foreign-origin"],
)
def test_callers_without_a_valid_key_or_from_a_foreign_origin_are_refused(
    served: ServerProcess, key: str | None, headers: dict[str, str]
) -> None:
    async def scenario() -> None:
        async with mcp_client(served, key=key, **headers):
            pass

    with pytest.raises(BaseException) as raised:  # the SDK wraps the error in task groups
        asyncio.run(scenario())
    text = _all_messages(raised.value)
    assert ("Unauthenticated" in text) if not headers else ("Origin not allowed" in text), text


def test_a_local_origin_is_accepted(served: ServerProcess) -> None:
    async def scenario() -> None:
        async with mcp_client(served, Origin=f"http://localhost:{served.http_port}") as client:
            assert (await client.list_tools()).tools

    asyncio.run(scenario())


def _all_messages(error: BaseException) -> str:
    parts = [repr(error)]
    for inner in getattr(error, "exceptions", ()):
        parts.append(_all_messages(inner))
    if error.__cause__ is not None:
        parts.append(_all_messages(error.__cause__))
    return " ".join(parts)


def test_the_standalone_gateway_serves_mcp_over_replicas_with_one_session() -> None:
    """Through the gRPC invoker, round-robin over two servers: the session handed out at
    initialize is good on every replica (nothing is kept per session)."""
    with start_server() as first, start_server() as second:
        port = free_port()
        command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target",
                   f"{first.grpc_target},{second.grpc_target}", "--port", str(port)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        try:
            gateway = ServerProcess(process, 0, port)  # only its http_base is used
            assert load.wait_until(lambda: _listening(port), within=20)

            async def scenario() -> None:
                async with mcp_client(gateway, key=None) as client:
                    assert {t.name for t in (await client.list_tools()).tools} >= {"math_guy", "echo"}
                    for _ in range(4):
                        result = await client.call_tool("math_guy", {"user_message": {"text": "6 * 7"}})
                        assert result.content[0].text == "The answer is 42."

            asyncio.run(scenario())
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
