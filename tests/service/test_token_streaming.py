"""Token streaming end to end over gRPC: an in-process server whose networks call the
streaming provider fake (tests/fakes/stream_fake.py) over real HTTP, and the project's
own gRPC client.

- With ``stream_tokens`` the front man's TOKEN_DELTA messages come before the final
  message and add up to its text; the first arrives while the fake is still writing
  (one word every 100 ms): ordering and presence, no timing.
- Without it the stream is today's (one message in MINIMAL, no delta in MAXIMAL), and
  the provider call is not even streamed.
- MAXIMAL gets every agent's deltas with their origins, MINIMAL only the front man's;
  reasoning is marked apart; the network's ``stream_tokens`` key is the default that an
  explicit false turns off.
- A client that goes away mid-answer closes the provider connection within a second.
- A provider error part-way ends the chat with today's gRPC status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from gateway import GatewayConfig
from gateway.composition import protocol_frontends, start_gateway
from gateway.invokers.inprocess import InProcessInvoker
from neuro_san.client import AsyncAgentClient
from neuro_san.client.errors import ClientError
from neuro_san.core.messages import ChatFilter, ChatMessage, DeltaKind, MessageType, Origin
from neuro_san.llm.interface import TextDelta
from neuro_san.runtime.context import Journal
from neuro_san.service.server import AgentServer, ServerConfig
from tests.fakes.stream_fake import StreamFake
from tests.fakes.stream_wire import Script

ANSWER = "The answer is forty two, as everybody knows by now."


def network(llm_config: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "llm_config": llm_config,
        "tools": [
            {
                "name": "front",
                "function": {"description": "Answers."},
                "instructions": "Answer the question; ask the helper when unsure.",
                "tools": ["helper", "/other"],
            },
            {
                "name": "helper",
                "function": {
                    "description": "Helps.",
                    "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
                },
                "instructions": "Help.",
            },
        ],
        **top,
    }


#: Another network of the same server, called by the talker as /other; it streams tokens
#: by default.
OTHER: dict[str, Any] = {
    "stream_tokens": True,
    "tools": [
        {
            "name": "elsewhere",
            "function": {
                "description": "Knows other things.",
                "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
            },
            "instructions": "Answer.",
        }
    ],
}

Body = Callable[[StreamFake, AsyncAgentClient], Awaitable[None]]
HttpBody = Callable[[StreamFake, str], Awaitable[None]]


def run(tmp_path: Path, body: Body, pace: float = 0.0, **top: Any) -> None:
    """``body(fake, grpc_client)`` against an in-process server."""

    async def main() -> None:
        async with served(tmp_path, pace, "in-process", **top) as (fake, port, _):
            async with AsyncAgentClient.grpc(f"127.0.0.1:{port}") as client:
                await asyncio.wait_for(body(fake, client), 30)

    asyncio.run(main())


def run_http(tmp_path: Path, body: HttpBody, pace: float = 0.0, via: str = "in-process", **top: Any) -> None:
    """``body(fake, http_base)`` against the same server's HTTP port (every front-end)."""

    async def main() -> None:
        async with served(tmp_path, pace, via, **top) as (fake, _, base):
            await asyncio.wait_for(body(fake, base), 30)

    asyncio.run(main())


@contextlib.asynccontextmanager
async def served(
    tmp_path: Path, pace: float, via: str = "in-process", **top: Any
) -> AsyncIterator[tuple[StreamFake, int, str]]:
    """``via``: the gateway calls the service in-process (``serve``) or over gRPC (the
    standalone gateway's way)."""
    async with StreamFake(pace=pace, awkward=False) as fake:
        config = fake.llm_config("openai", max_attempts=1)
        (tmp_path / "talker.json").write_text(json.dumps(network(config, **top)))
        (tmp_path / "other.json").write_text(json.dumps(OTHER | {"llm_config": config}))
        (tmp_path / "manifest.json").write_text(json.dumps({"talker.json": True, "other.json": True}))
        server = AgentServer(ServerConfig(host="127.0.0.1", port=0, manifest_paths=[tmp_path / "manifest.json"]))
        port = await server.start()
        invoker = (
            InProcessInvoker(server.handlers.generic, server.health, server.config.max_message_bytes)
            if via == "in-process"
            else server.internal_target
        )
        frontends = protocol_frontends(playground=False, env={})
        gateway = await start_gateway(invoker, "127.0.0.1", 0, GatewayConfig(), frontends=frontends)
        try:
            yield fake, port, f"http://127.0.0.1:{gateway.port}"
        finally:
            await gateway.stop()
            await server.stop(0.5)


async def chat(
    client: AsyncAgentClient, stream_tokens: bool | None, maximal: bool = False, text: str = "question?"
) -> list[ChatMessage]:
    filter_ = ChatFilter.MAXIMAL if maximal else ChatFilter.MINIMAL
    return [m async for m in client.streaming_chat("talker", text, filter=filter_, stream_tokens=stream_tokens)]


def deltas(messages: list[ChatMessage]) -> list[ChatMessage]:
    return [m for m in messages if m.type is MessageType.TOKEN_DELTA]


def test_the_first_delta_arrives_before_the_model_has_finished(tmp_path: Path) -> None:
    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(Script(text=ANSWER))
        written_at_first_delta = None
        received: list[ChatMessage] = []
        async for message in client.streaming_chat("talker", "question?", stream_tokens=True):
            if written_at_first_delta is None and message.type is MessageType.TOKEN_DELTA:
                written_at_first_delta = fake.events_written
            received.append(message)
        assert written_at_first_delta is not None
        assert written_at_first_delta < fake.events_total, "the first word came before the fake wrote its last"
        final = received[-1]
        assert final.type is MessageType.AGENT_FRAMEWORK and final.text == ANSWER
        assert all(m.type is MessageType.TOKEN_DELTA for m in received[:-1])
        assert "".join(m.text for m in received[:-1]) == ANSWER
        assert {tuple(o.tool for o in m.origin) for m in received[:-1]} == {("front",)}
        assert fake.requests[-1].body["stream"] is True

    run(tmp_path, body, pace=0.1)


def test_without_stream_tokens_the_stream_is_todays(tmp_path: Path) -> None:
    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(Script(text=ANSWER))
        minimal = await chat(client, None)
        assert [(m.type, m.text) for m in minimal] == [(MessageType.AGENT_FRAMEWORK, ANSWER)]
        assert fake.requests[-1].body["stream"] is False, "the provider call is today's"
        fake.enqueue(Script(text=ANSWER))
        maximal = await chat(client, False, maximal=True)
        assert not deltas(maximal) and maximal[-1].text == ANSWER
        assert fake.requests[-1].body["stream"] is False

    run(tmp_path, body)


def test_maximal_streams_every_agents_deltas_minimal_only_the_front_mans(tmp_path: Path) -> None:
    plan = [
        Script(text="Asking. ", tool_calls=(("c1", "helper", {"question": "what?"}),)),
        Script(text="Helper says 42.", reasoning="Let me think it over."),
        Script(text=ANSWER),
    ]

    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(*plan)
        maximal = await chat(client, True, maximal=True)
        by_origin: dict[tuple[str, ...], str] = {}
        for message in deltas(maximal):
            key = tuple(o.tool for o in message.origin) + (message.delta_kind.name,)
            by_origin[key] = by_origin.get(key, "") + message.text
        assert by_origin == {
            ("front", "ANSWER"): "Asking. " + ANSWER,
            ("front", "helper", "ANSWER"): "Helper says 42.",
            ("front", "helper", "REASONING"): "Let me think it over.",
        }
        # The complete messages of today are all still there, in their order.
        kinds = [m.type for m in maximal if m.type is not MessageType.TOKEN_DELTA]
        assert kinds[-1] is MessageType.AGENT_FRAMEWORK and MessageType.AGENT_TOOL_RESULT in kinds
        helper_ai = [m for m in maximal if m.type is MessageType.AI and len(m.origin) == 2]
        assert helper_ai[0].text == "Helper says 42."
        helper_deltas = [i for i, m in enumerate(maximal) if len(m.origin) == 2 and m.type is MessageType.TOKEN_DELTA]
        assert helper_deltas[-1] < maximal.index(helper_ai[0])

        fake.enqueue(*plan)
        minimal = await chat(client, True)
        assert {tuple(o.tool for o in m.origin) for m in deltas(minimal)} == {("front",)}
        assert [m.type for m in minimal if m.type is not MessageType.TOKEN_DELTA] == [MessageType.AGENT_FRAMEWORK]
        assert all(m.delta_kind is DeltaKind.ANSWER for m in deltas(minimal))

    run(tmp_path, body)


def test_the_networks_default_and_an_explicit_false(tmp_path: Path) -> None:
    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(Script(text=ANSWER))
        default = await chat(client, None)
        assert "".join(m.text for m in deltas(default)) == ANSWER == default[-1].text
        assert fake.requests[-1].body["stream"] is True
        fake.enqueue(Script(text=ANSWER))
        off = await chat(client, False)
        assert [m.type for m in off] == [MessageType.AGENT_FRAMEWORK]
        assert fake.requests[-1].body["stream"] is False

    run(tmp_path, body, stream_tokens=True)


def test_a_client_that_goes_away_closes_the_provider_connection(tmp_path: Path) -> None:
    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(Script(text=" ".join(f"word{i}" for i in range(200))))
        stream = client.streaming_chat("talker", "question?", stream_tokens=True)
        async for message in stream:
            assert message.type is MessageType.TOKEN_DELTA
            break
        await stream.aclose()  # type: ignore[attr-defined]
        # The bound: the fake sees its connection closed within a second.
        await asyncio.wait_for(fake.closed.wait(), 1.0)
        assert fake.replies_finished == 0 and fake.events_written < fake.events_total

    run(tmp_path, body, pace=0.05)


def test_an_error_part_way_ends_the_chat_with_todays_status(tmp_path: Path) -> None:
    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(Script(text="one two three four", error_after=2, error=("rate_limit_exceeded", "slow down")))
        received: list[ChatMessage] = []
        with pytest.raises(ClientError) as caught:
            async for message in client.streaming_chat("talker", "question?", stream_tokens=True):
                received.append(message)
        assert "".join(m.text for m in deltas(received)) == "one two "
        # As a whole reply's 429 after its retries: UNAVAILABLE, the provider's words kept.
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE.value[0]
        assert "rate limited (HTTP 429 from the provider, mid-stream): slow down" in str(caught.value)

    run(tmp_path, body)


@pytest.mark.parametrize("via", ["in-process", "grpc"])
def test_http_lines_carry_each_delta_before_the_model_has_finished(tmp_path: Path, via: str) -> None:
    async def body(fake: StreamFake, base: str) -> None:
        fake.enqueue(Script(text=ANSWER))
        request = {"user_message": {"text": "question?"}, "stream_tokens": True}
        lines: list[dict[str, Any]] = []
        written_at_first_delta = None
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{base}/api/v1/talker/streaming_chat", json=request) as reply:
                assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/json-lines")
                async for raw in reply.content:
                    line = json.loads(raw)
                    if written_at_first_delta is None and line["response"]["type"] == "TOKEN_DELTA":
                        written_at_first_delta = fake.events_written
                    lines.append(line)
        assert written_at_first_delta is not None and written_at_first_delta < fake.events_total
        *delta_lines, final = lines
        assert {line["response"]["type"] for line in delta_lines} == {"TOKEN_DELTA"}
        assert "".join(line["response"]["text"] for line in delta_lines) == final["response"]["text"] == ANSWER
        assert all("delta_kind" not in line["response"] and "request" not in line for line in delta_lines)

    run_http(tmp_path, body, pace=0.1, via=via)


def test_deltas_waiting_for_a_slow_reader_join_and_keep_their_order() -> None:
    async def scenario() -> None:
        journal = Journal(streaming=True, tokens="all")
        assert journal.queue is not None
        front, helper = (Origin("front"),), (Origin("front"), Origin("helper"))
        write, help_ = journal.delta_sink(front), journal.delta_sink(helper)
        assert write is not None and help_ is not None
        write(TextDelta("The "))
        write(TextDelta("answer "))  # nobody took the first yet: it joins
        write(TextDelta("hmm", reasoning=True))  # another kind: its own message
        write(TextDelta("is "))  # the reasoning is last in line now: its own message too
        help_(TextDelta("42"))  # another agent: its own message
        taken = [journal.queue.get_nowait() for _ in range(journal.queue.qsize())]
        assert [(m.text, m.delta_kind, len(m.origin)) for m in taken] == [
            ("The answer ", DeltaKind.ANSWER, 1), ("hmm", DeltaKind.REASONING, 1),
            ("is ", DeltaKind.ANSWER, 1), ("42", DeltaKind.ANSWER, 2),
        ]  # fmt: skip
        write(TextDelta("forty"))  # the last one was taken: a new message
        write(TextDelta(" two"))
        journal.emit(ChatMessage(MessageType.AI, "done", front))  # a complete message ends the run
        write(TextDelta("!"))
        taken = [journal.queue.get_nowait() for _ in range(journal.queue.qsize())]
        assert [m.text for m in taken] == ["forty two", "done", "!"]
        assert Journal(streaming=False, tokens="front").delta_sink(helper) is None  # MINIMAL: the front man's only

    asyncio.run(scenario())


def test_a_called_network_of_the_same_server_does_not_stream_whatever_its_default(tmp_path: Path) -> None:
    async def body(fake: StreamFake, client: AsyncAgentClient) -> None:
        fake.enqueue(
            Script(text="Asking. ", tool_calls=(("c1", "__other", {"question": "what?"}),)),
            Script(text="Other says 42."),
            Script(text=ANSWER),
        )
        messages = await chat(client, True, maximal=True)
        assert messages[-1].text == ANSWER
        assert {tuple(o.tool for o in m.origin) for m in deltas(messages)} == {("front",)}
        assert "".join(m.text for m in deltas(messages)) == "Asking. " + ANSWER
        assert [seen.body["stream"] for seen in fake.requests] == [True, False, True]

    run(tmp_path, body)
