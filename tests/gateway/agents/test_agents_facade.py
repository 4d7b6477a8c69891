"""The agents facade (gateway/agents) against a real in-process server.

An :class:`~neuro_san.service.server.AgentServer` in this process, its networks calling the
streaming provider fake over real HTTP, reached through the real in-process invoker, as
``neuro-san serve`` wires MCP and A2A. Checked: the typed events of one turn (answer deltas,
steps with a tool's arguments and result, the answer with its chat_context), a failure as
an event and not a grpc exception, a turn the API cannot carry refused before any call,
and a consumer that stops (``aclose``, a cancelled task) cancelling the chat, so the
provider connection closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from neuro_san.api.grpc import directory_pb2

from gateway.agents.interface import (
    AgentsFailed,
    Answer,
    AnswerDelta,
    Caller,
    ChatEvent,
    ChatFailed,
    InvalidTurn,
    Step,
    Turn,
)
from gateway.agents.invoked import InvokedAgents
from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from gateway.transcoder.frontend import default_services
from neuro_san.core.errors import Code
from neuro_san.service.server import AgentServer, ServerConfig
from tests.fakes.stream_fake import StreamFake
from tests.fakes.stream_wire import Script

pytestmark = pytest.mark.slow

ANSWER = "The answer is forty two."


def _networks(tmp_path: Path, config: dict[str, Any]) -> Path:
    talker = {"llm_config": config, "tools": [
        {"name": "front", "function": {"description": "Answers."}, "instructions": "Answer.", "tools": ["/other"]},
    ]}
    other = {"llm_config": config, "tools": [{
        "name": "elsewhere", "instructions": "Answer.",
        "function": {"description": "Knows.", "parameters": {"type": "object",
                                                              "properties": {"question": {"type": "string"}}}},
    }]}
    (tmp_path / "talker.json").write_text(json.dumps(talker))
    (tmp_path / "other.json").write_text(json.dumps(other))
    (tmp_path / "manifest.json").write_text(json.dumps({"talker.json": True, "other.json": True}))
    return tmp_path / "manifest.json"


class Counting:
    """An invoker's callable (StreamingChat, DirectoryService/List), counting the calls made."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner(*args, **kwargs)


@contextlib.asynccontextmanager
async def served(tmp_path: Path, pace: float = 0.0) -> AsyncIterator[tuple[StreamFake, InvokedAgents, Counting]]:
    async with StreamFake(pace=pace, awkward=False) as fake:
        manifest = _networks(tmp_path, fake.llm_config("openai", max_attempts=1))
        server = AgentServer(ServerConfig(host="127.0.0.1", port=0, manifest_paths=[manifest]))
        await server.start()
        invoker = InProcessInvoker(server.handlers.generic, server.health, server.config.max_message_bytes)
        methods = methods_of([*default_services(), directory_pb2.DESCRIPTOR.services_by_name["DirectoryService"]])

        def method(name: str) -> Any:
            return invoker.callable_for(next(m for path, m in methods.items() if path.endswith(name)))

        chat = Counting(method("/StreamingChat"))
        agents = InvokedAgents(chat, 20.0, directory_list=method("DirectoryService/List"),
                               function=method("AgentService/Function"))
        try:
            yield fake, agents, chat
        finally:
            await invoker.close()
            await server.stop(0.5)


Body = Callable[[StreamFake, InvokedAgents, Counting], Awaitable[None]]


def run(tmp_path: Path, body: Body, pace: float = 0.0) -> None:
    async def main() -> None:
        async with served(tmp_path, pace) as (fake, agents, chat):
            await asyncio.wait_for(body(fake, agents, chat), 20)

    asyncio.run(main())


async def _events(agents: InvokedAgents, agent: str, turn: Turn) -> list[ChatEvent]:
    async with agents.chat(agent, turn, Caller([("request_id", "facade-1")])) as stream:
        return [event async for event in stream]


def test_one_turn_is_deltas_steps_and_the_answer(tmp_path: Path) -> None:
    async def body(fake: StreamFake, agents: InvokedAgents, _: Counting) -> None:
        fake.enqueue(
            Script(text="Asking. ", tool_calls=(("c1", "__other", {"question": "what?"}),)),
            Script(text="Elsewhere says 42."),
            Script(text=ANSWER),
        )
        events = await _events(agents, "talker", Turn.of_text("question?", steps=True, stream_tokens=True))
        answer = events[-1]
        assert isinstance(answer, Answer) and answer.text == ANSWER
        assert answer.chat_context is not None and answer.chat_context["chat_histories"]
        assert [e for e in events if isinstance(e, Answer)] == [answer], "one answer, last"
        deltas = "".join(e.text for e in events if isinstance(e, AnswerDelta))
        assert deltas.endswith(ANSWER), deltas  # the front man's pieces only: not "Elsewhere says 42."
        assert "Elsewhere" not in deltas
        steps = [e for e in events if isinstance(e, Step)]
        assert {"question": "what?"} in [s.arguments for s in steps]
        assert "Elsewhere says 42." in [s.result for s in steps]
        # What the front man gets back names the tool it comes from.
        returned = [s for s in steps if s.kind == "AGENT_TOOL_RESULT"]
        assert [(s.origin, s.result_of, s.text) for s in returned] == [(("front",), ("front", "/other"),
                                                                         "Elsewhere says 42.")]
        assert all(s.result_of == () for s in steps if s.kind != "AGENT_TOOL_RESULT")
        assert all(s.kind in {"AI", "AGENT", "AGENT_TOOL_RESULT", "AGENT_PROGRESS"} for s in steps)
        assert all(s.origin and s.origin[0] == "front" for s in steps)

        # The answer's chat_context continues the conversation (MINIMAL: the answer only).
        fake.enqueue(Script(text="Still forty two."))
        again = await _events(agents, "talker", Turn.of_text("and now?", chat_context=answer.chat_context))
        assert [type(e) for e in again] == [Answer] and isinstance(again[0], Answer)
        assert "question?" in json.dumps(fake.requests[-1].body), "the model saw the first turn"

    run(tmp_path, body)


def test_a_failure_is_an_event_and_ends_the_stream(tmp_path: Path) -> None:
    async def body(_fake: StreamFake, agents: InvokedAgents, _: Counting) -> None:
        events = await _events(agents, "no_such_network", Turn.of_text("hi"))
        assert len(events) == 1 and isinstance(events[0], ChatFailed)
        failed = events[0]
        assert failed.code is Code.NOT_FOUND and not failed.is_refusal
        assert "no_such_network" in failed.message and failed.retry_after is None

    run(tmp_path, body)


def test_a_turn_the_api_cannot_carry_is_refused_before_any_call(tmp_path: Path) -> None:
    async def body(_fake: StreamFake, agents: InvokedAgents, chat: Counting) -> None:
        with pytest.raises(InvalidTurn, match="user_message.text"):
            agents.chat("talker", Turn({"text": 5}), Caller([]))
        # A2A's rule: an unknown field of chat_context is refused, not ignored.
        with pytest.raises(InvalidTurn, match="bogus") as caught:
            agents.chat("talker", Turn.of_text("hi", chat_context={"bogus": 1}, strict_context=True), Caller([]))
        assert caught.value.field == "chat_context"
        agents.chat("talker", Turn.of_text("hi", chat_context={"bogus": 1}), Caller([]))  # REST's and MCP's: ignored
        assert chat.calls == 0, "nothing was called: a call starts on the first read"

    run(tmp_path, body)


def test_closing_the_stream_cancels_the_chat(tmp_path: Path) -> None:
    async def body(fake: StreamFake, agents: InvokedAgents, _: Counting) -> None:
        fake.enqueue(Script(text=" ".join(f"word{i}" for i in range(200))))
        stream = agents.chat("talker", Turn.of_text("question?", stream_tokens=True), Caller([]))
        assert isinstance(await anext(stream), AnswerDelta)
        await stream.aclose()
        await asyncio.wait_for(fake.closed.wait(), 1.0)
        assert fake.replies_finished == 0 and fake.events_written < fake.events_total
        with pytest.raises(StopAsyncIteration):
            await anext(stream)

    run(tmp_path, body, pace=0.05)


def test_a_cancelled_reader_cancels_the_chat(tmp_path: Path) -> None:
    async def body(fake: StreamFake, agents: InvokedAgents, _: Counting) -> None:
        fake.enqueue(Script(text=" ".join(f"word{i}" for i in range(200))))
        first = asyncio.Event()

        async def read() -> None:
            async for _event in agents.chat("talker", Turn.of_text("question?", stream_tokens=True), Caller([])):
                first.set()

        reader = asyncio.ensure_future(read())
        await asyncio.wait_for(first.wait(), 5)
        reader.cancel()  # while it waits for the next piece: as a client going away does
        with pytest.raises(asyncio.CancelledError):
            await reader
        await asyncio.wait_for(fake.closed.wait(), 1.0)
        assert fake.replies_finished == 0

    run(tmp_path, body, pace=0.05)


def test_the_directory_lists_and_describes_through_the_service(tmp_path: Path) -> None:
    async def body(_fake: StreamFake, agents: InvokedAgents, chat: Counting) -> None:
        listing = await agents.listing(Caller([]))
        listed = list(listing.agents)
        assert sorted(entry.name for entry in listed) == ["other", "talker"]
        assert {entry.name: entry.mcp_tool for entry in listed} == {"other": "other", "talker": "talker"}
        # Each entry carries its front man's function: no describe call per network.
        functions = {entry.name: entry.function for entry in listed}
        assert functions["other"] is not None and functions["other"].description == "Knows."
        assert functions["other"].parameters == {"type": "object", "properties": {"question": {"type": "string"}}}
        assert functions["talker"] is not None and functions["talker"].description == "Answers."
        again = await agents.listing(Caller([]))
        assert listing.version and again.version == listing.version  # the same listing, the same version
        other = await agents.describe("other", Caller([]))
        assert other.description == "Knows."
        assert other.parameters == {"type": "object", "properties": {"question": {"type": "string"}}}
        with pytest.raises(AgentsFailed) as failed:
            await agents.describe("nobody", Caller([]))
        assert failed.value.code == Code.NOT_FOUND
        assert chat.calls == 0  # the directory is not a chat

    run(tmp_path, body)
