"""The client library against a real server, on both transports (gRPC and the gateway)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from neuro_san.client import (
    MAXIMAL,
    AgentClient,
    AgentNotFound,
    AsyncAgentClient,
    ChatMessage,
    DeadlineExceeded,
    InvalidRequest,
    MessageType,
    ResourceExhausted,
    Unavailable,
)
from neuro_san.core import errors as core_errors
from tests.support.servers import BUNDLED_MANIFEST, ServerProcess, free_port, start_server
from tests.support.waits import until, wait_until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

T = TypeVar("T")

SLEEPER_TOOL = '''
import asyncio, os
from pathlib import Path
from neuro_san.interfaces.coded_tool import CodedTool

class Sleeper(CodedTool):
    """Sleeps; leaves started/finished/cancelled marks in $SLEEPER_MARKS."""

    async def async_invoke(self, args, sly_data):
        marks = Path(os.environ["SLEEPER_MARKS"])
        name = str(args.get("seconds", "1")).strip()
        (marks / f"{name}.started").touch()
        reporter = args.get("progress_reporter")
        try:
            if reporter is not None:
                await reporter.async_report_progress({"progress": 0}, "sleeping")
            await asyncio.sleep(float(name))  # the behaviour: a tool that takes its time
        except asyncio.CancelledError:
            (marks / f"{name}.cancelled").touch()
            raise
        (marks / f"{name}.finished").touch()
        return "slept " + name
'''


def _sleeper_network(limit: float | None) -> dict[str, Any]:
    network: dict[str, Any] = {
        "llm_config": {"class": "scripted"},
        "tools": [
            {
                "name": "sleepy",
                "function": {"description": "Sleeps as many seconds as it is told."},
                "instructions": "Sleep.",
                "tools": ["sleeper"],
            },
            {
                "name": "sleeper",
                "function": {
                    "description": "Sleeps.",
                    "parameters": {"type": "object", "properties": {"seconds": {"type": "string"}}},
                },
                "class": "sleeper.Sleeper",
            },
        ],
    }
    if limit is not None:
        network["max_execution_seconds"] = limit
    return network


def write_slow_networks(root: Path) -> tuple[Path, Path, Path]:
    """Networks ``sleepy`` and ``hasty`` (a 1 s budget) around a sleeping coded tool.

    Returns (manifest, tool path, marks folder)."""
    tools, marks = root / "tools", root / "marks"
    tools.mkdir(parents=True)
    marks.mkdir()
    (tools / "sleeper.py").write_text(SLEEPER_TOOL)
    (root / "sleepy.json").write_text(json.dumps(_sleeper_network(None)))
    (root / "hasty.json").write_text(json.dumps(_sleeper_network(1.0)))
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps({"sleepy.json": {"serve": True, "public": False}, "hasty.json": True}))
    return manifest, tools, marks


@pytest.fixture(scope="module")
def slow_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return write_slow_networks(tmp_path_factory.mktemp("slow"))


@pytest.fixture(scope="module")
def full_server(slow_root: tuple[Path, Path, Path]) -> Iterator[ServerProcess]:
    """The bundled networks plus the slow ones, with the gateway."""
    manifest, tools, marks = slow_root
    extra = ["--manifest", str(BUNDLED_MANIFEST), "--tool-path", str(tools)]
    with start_server(manifest=manifest, env={"SLEEPER_MARKS": str(marks)}, http=True, extra_args=extra) as server:
        yield server


@pytest.fixture(params=["grpc", "http"])
def url(request: pytest.FixtureRequest, full_server: ServerProcess) -> str:
    return f"grpc://{full_server.grpc_target}" if request.param == "grpc" else full_server.http_base


def run(url: str, body: Callable[[AsyncAgentClient], Awaitable[T]], timeout: float = 30) -> T:
    """Run ``body`` with a client of ``url`` on a fresh event loop, bounded in time."""

    async def main() -> T:
        async with AsyncAgentClient.from_url(url) as client:
            return await asyncio.wait_for(body(client), timeout)

    return asyncio.run(main())


def test_list_names_the_public_networks(url: str) -> None:
    agents = {a.agent_name: a for a in run(url, lambda c: c.list())}
    assert sorted(agents) == ["echo", "hasty", "hello_world", "math_guy", "math_guy_passthrough"]
    assert agents["math_guy"].description == "Does arithmetic with a coded calculator."
    assert agents["math_guy"].tags == ("example", "offline", "coded_tool")


def test_function_of_a_network_in_a_sub_folder(url: str) -> None:
    info = run(url, lambda c: c.function("deep/math_guy"))
    assert info.description == "I do arithmetic."
    assert info.parameters is not None and info.parameters["required"] == ["expression"]
    assert info.sly_data_schema is None
    assert info.to_dict()["parameters"]["properties"]["expression"]["type"] == "string"


def test_connectivity(url: str) -> None:
    connectivity = run(url, lambda c: c.connectivity("math_guy"))
    assert [(e.origin, e.tools, e.display_as) for e in connectivity.entries] == [
        ("math_guy", ("calculator",), "llm_agent"),
        ("calculator", (), "coded_tool"),
    ]
    assert connectivity.metadata is not None and connectivity.metadata["tags"][-1] == "coded_tool"


def test_one_shot_chat(url: str) -> None:
    answer = run(url, lambda c: c.chat("math_guy", "2 ** 10", sly_data={"private": "x"}))
    assert answer.type is MessageType.AGENT_FRAMEWORK
    assert answer.text == "The answer is 1024."
    assert answer.sly_data == {"equals": 1024}  # only the allowed key, as an int
    assert answer.chat_context is not None
    # As neuro-san, the history keeps the tool's output before the answer.
    history = answer.chat_context.chat_histories[0].messages
    assert [m.text for m in history] == ["2 ** 10", "1024", "The answer is 1024."]


def test_maximal_streaming_yields_each_message_with_its_origin(url: str) -> None:
    async def collect(client: AsyncAgentClient) -> list[ChatMessage]:
        return [m async for m in client.streaming_chat("math_guy", "6 * 7", filter=MAXIMAL)]

    messages = run(url, collect)
    steps = [(m.type.name, [o.tool for o in m.origin]) for m in messages]
    assert steps[:3] == [("SYSTEM", ["math_guy"]), ("HUMAN", ["math_guy"]), ("AGENT", ["math_guy"])]
    assert ("AGENT_PROGRESS", ["math_guy", "calculator"]) in steps
    result = next(m for m in messages if m.type is MessageType.AGENT_TOOL_RESULT)
    assert result.text == "42" and [o.tool for o in result.tool_result_origin] == ["math_guy", "calculator"]
    assert messages[-1].type is MessageType.AGENT_FRAMEWORK and not messages[-1].origin
    assert messages[-1].text == "The answer is 42."


def test_conversation_carries_the_context(url: str) -> None:
    async def talk(client: AsyncAgentClient) -> tuple[list[str], list[str]]:
        conversation = client.conversation("echo")
        texts = [(await conversation.send("first")).text]
        streamed = [m async for m in conversation.stream("second")]
        texts.append(streamed[-1].text)
        assert conversation.chat_context is not None
        history = [m.text for m in conversation.chat_context.chat_histories[0].messages]
        return texts, history

    texts, history = run(url, talk)
    assert texts == ["first", "second"]
    assert history == ["first", "first", "second", "second"]


def test_unknown_agent_is_agent_not_found_with_the_servers_message(url: str) -> None:
    for call in (
        lambda c: c.function("no_such_agent"),
        lambda c: c.connectivity("no_such_agent"),
        lambda c: c.chat("no_such_agent", "hi"),
    ):
        with pytest.raises(AgentNotFound) as info:
            run(url, call)
        assert info.value.message == "agent 'no_such_agent' is not served here"
        assert info.value.agent == "no_such_agent"
        assert info.value.reason == "AGENT_NOT_FOUND"
        assert isinstance(info.value, core_errors.AgentNotFound)  # the core tree catches it too


@pytest.mark.parametrize("scheme", ["grpc", "http"])
def test_unreachable_server_is_unavailable(scheme: str) -> None:
    target = f"{scheme}://127.0.0.1:{free_port()}"
    with pytest.raises(Unavailable) as info:
        run(target, lambda c: c.list())
    assert "cannot reach" in info.value.message and target.split("://")[1] in info.value.message


def _outcome(marks: Path, seconds: str, within: float = 20.0) -> str:
    """How the sleeper of ``seconds`` ended: "cancelled", "finished", or "running" if it did
    neither within ``within`` s (a bound against hanging only: it sleeps far longer)."""
    ends = ("cancelled", "finished")
    wait_until(lambda: any((marks / f"{seconds}.{end}").exists() for end in ends), within)
    return next((end for end in ends if (marks / f"{seconds}.{end}").exists()), "running")


def test_client_deadline_is_deadline_exceeded(url: str, slow_root: tuple[Path, Path, Path]) -> None:
    marks = slow_root[2]
    seconds = "30.1" if url.startswith("grpc") else "30.2"  # one mark name per transport
    with pytest.raises(DeadlineExceeded):
        run(url, lambda c: c.chat("sleepy", seconds, timeout=0.5))
    # The deadline ended the call, not the tool: that was still asleep (for 30 s).
    assert not (marks / f"{seconds}.finished").exists()


def test_server_deadline_mid_stream_carries_the_servers_message(url: str) -> None:
    seen: list[ChatMessage] = []

    async def consume(client: AsyncAgentClient) -> None:
        async for message in client.streaming_chat("hasty", "3.1", filter=MAXIMAL):
            seen.append(message)

    with pytest.raises(DeadlineExceeded) as info:
        run(url, consume)
    assert "max_execution_seconds" in info.value.message  # the server's own words
    assert seen and seen[0].type is MessageType.SYSTEM  # the error came after the stream began


def test_oversized_request_is_refused_with_the_servers_message(url: str) -> None:
    # gRPC says RESOURCE_EXHAUSTED; the gateway answers 413 with an INVALID_ARGUMENT Status.
    expected = ResourceExhausted if url.startswith("grpc") else InvalidRequest
    with pytest.raises(expected) as info:
        run(url, lambda c: c.chat("echo", "x" * (17 * 1024 * 1024)))
    assert "larger than" in info.value.message


def test_invalid_request_over_grpc_carries_the_servers_message(full_server: ServerProcess) -> None:
    # The library always names the agent; the transport below it can be made not to.
    client = AsyncAgentClient.grpc(full_server.grpc_target)

    async def unnamed() -> Any:
        try:
            return await client.transport.function(None, None, 5)  # type: ignore[arg-type]
        finally:
            await client.close()

    with pytest.raises(InvalidRequest) as info:
        asyncio.run(unnamed())
    assert "agent-name" in info.value.message and info.value.field == "agent-name"


def test_cancelling_the_consumer_cancels_the_servers_work(url: str, slow_root: tuple[Path, Path, Path]) -> None:
    marks = slow_root[2]
    seconds = "30.3" if url.startswith("grpc") else "30.4"  # one mark name per transport

    async def consume(client: AsyncAgentClient) -> None:
        async for _message in client.streaming_chat("sleepy", seconds, filter=MAXIMAL):
            pass

    async def main() -> None:
        async with AsyncAgentClient.from_url(url) as client:
            task = asyncio.create_task(consume(client))
            # Until the tool runs on the server.
            assert await until(lambda: (marks / f"{seconds}.started").exists() or task.done())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    assert (marks / f"{seconds}.started").exists()
    assert _outcome(marks, seconds) == "cancelled", "the server kept working after the client went away"


def test_breaking_out_of_a_stream_cancels_the_call(url: str, slow_root: tuple[Path, Path, Path]) -> None:
    marks = slow_root[2]
    seconds = "30.5" if url.startswith("grpc") else "30.6"  # one mark name per transport

    async def first_progress(client: AsyncAgentClient) -> str:
        async for message in client.streaming_chat("sleepy", seconds, filter=MAXIMAL):
            if message.type is MessageType.AGENT_PROGRESS:
                return message.text  # leaving the loop closes the stream
        return ""

    assert run(url, first_progress) == "sleeping"
    # Left while the tool was still asleep (for 30 s), and leaving cancelled it.
    assert not (marks / f"{seconds}.finished").exists()
    assert _outcome(marks, seconds) == "cancelled"


def test_blocking_client(url: str) -> None:
    with AgentClient.from_url(url) as client:
        assert "echo" in [a.agent_name for a in client.list()]
        assert client.chat("echo", "ping").text == "ping"
        types = [m.type for m in client.streaming_chat("math_guy", "1+2", filter=MAXIMAL)]
        assert types[0] is MessageType.SYSTEM and types[-1] is MessageType.AGENT_FRAMEWORK
        conversation = client.conversation("echo")
        conversation.send("one")
        assert conversation.send("two").text == "two"
        assert conversation.chat_context is not None
        assert len(conversation.chat_context.chat_histories[0].messages) == 4
        with pytest.raises(AgentNotFound):
            client.function("no_such_agent")


def test_from_url_rejects_what_is_not_a_server_url() -> None:
    with pytest.raises(ValueError):
        AsyncAgentClient.from_url("ftp://example.com/")
    assert AsyncAgentClient.from_url("localhost").description == "grpc://localhost:30011"
    assert AsyncAgentClient.from_url("http://localhost").description == "http://localhost:8080"
