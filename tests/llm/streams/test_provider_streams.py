"""Every provider adapter streams (``Model.complete(..., on_delta=…)``) over real HTTP,
against tests/fakes/stream_fake.py writing each provider's streaming wire format cut at
awkward byte boundaries (inside UTF-8 characters, SSE lines and JSON strings), with
keep-alives, a usage-only last chunk, error events part-way, and a client that goes away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from neuro_san.llm.errors import LlmConnectionError, LlmError, LlmHttpError, LlmRateLimited
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.interface import LlmMessage, Model, ModelResponse, TextDelta, ToolSpec
from neuro_san.llm.streams.framing import SseDecoder, SseEvent
from neuro_san.llm.streams.openai import OpenAIStream
from tests.fakes.fake_llm import FakeLlmServer, Reply, run_with_fake_llm
from tests.fakes.stream_fake import StreamFake
from tests.fakes.stream_wire import Script, awkward_chunks

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

KINDS = ["openai", "anthropic", "gemini", "bedrock-converse", "bedrock-invoke"]
TEXT = "Grüße aus Köln: 🙂 naïve “quotes” and 漢字, then a final word."
REASONING = "Hmm — the user wants ünïcode; think… done."
HELLO = [LlmMessage("user", "hello")]
LOOKUP = ToolSpec("lookup", "Looks a thing up.", {"type": "object", "properties": {"q": {"type": "string"}}})


def run(kind: str, body: Callable[[StreamFake, Model], Awaitable[None]], **fake: Any) -> None:
    async def main() -> None:
        factory = LlmFactory(env={})
        async with StreamFake(**fake) as server:
            model = factory.create(server.llm_config(kind, max_attempts=1))
            try:
                await asyncio.wait_for(body(server, model), 20)
            finally:
                await factory.aclose()

    asyncio.run(main())


async def streamed(model: Model, tools: list[ToolSpec] | None = None) -> tuple[ModelResponse, list[TextDelta]]:
    deltas: list[TextDelta] = []
    response = await model.complete(HELLO, tools or [], on_delta=deltas.append)
    return response, deltas


def answer(deltas: list[TextDelta]) -> str:
    return "".join(d.text for d in deltas if not d.reasoning)


def reasoning(deltas: list[TextDelta]) -> str:
    return "".join(d.text for d in deltas if d.reasoning)


@pytest.mark.parametrize("kind", KINDS)
def test_text_and_reasoning_arrive_as_deltas_that_add_up_to_the_reply(kind: str) -> None:
    async def body(fake: StreamFake, model: Model) -> None:
        fake.enqueue(Script(text=TEXT, reasoning=REASONING, usage=(31, 17)))
        response, deltas = await streamed(model)
        assert answer(deltas) == response.text == TEXT
        assert reasoning(deltas) == REASONING
        assert len([d for d in deltas if not d.reasoning]) == len(TEXT.split())
        assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (31, 17)
        assert not response.truncated and not response.tool_calls
        assert response.reasoning, "the reasoning state is kept for the next turn"
        seen = fake.requests[-1]
        if kind == "openai":
            assert seen.body["stream"] is True and seen.body["stream_options"] == {"include_usage": True}
        elif kind == "anthropic":
            assert seen.body["stream"] is True
        elif kind == "gemini":
            assert seen.path.endswith(":streamGenerateContent") and seen.query == {"alt": "sse"}
        else:
            assert "stream" not in seen.body

    run(kind, body)


@pytest.mark.parametrize("kind", KINDS)
def test_tool_calls_are_assembled_from_their_pieces(kind: str) -> None:
    arguments = {"q": "Zürich “Altstadt” 🙂", "n": [1, 2.5, None]}
    broken = '{"q": "unterminated'

    async def body(fake: StreamFake, model: Model) -> None:
        calls = (("call_a", "lookup", arguments), ("call_b", "lookup", broken))
        fake.enqueue(Script(text="Let me look.", tool_calls=calls if kind != "gemini" else calls[:1]))
        response, deltas = await streamed(model, [LOOKUP])
        assert answer(deltas) == response.text == "Let me look."
        first = response.tool_calls[0]
        assert (first.name, dict(first.arguments), first.arguments_error) == ("lookup", arguments, None)
        if kind != "gemini":  # Gemini streams each call whole: it has no pieces to break
            second = response.tool_calls[1]
            assert second.arguments == {} and second.arguments_error
            assert {call.id for call in response.tool_calls} == {"call_a", "call_b"}

    run(kind, body)


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_off_reply_is_truncated_as_a_whole_one_is(kind: str) -> None:
    async def body(fake: StreamFake, model: Model) -> None:
        fake.enqueue(Script(text="It was the best of", truncated=True))
        response, _ = await streamed(model)
        assert response.truncated and response.text == "It was the best of"

    run(kind, body)


#: kind → (the provider's error name in its error event, the error the same failure is today)
ERRORS: dict[str, tuple[str, type[LlmError], int]] = {
    "openai": ("rate_limit_exceeded", LlmRateLimited, 429),
    "anthropic": ("overloaded_error", LlmHttpError, 529),
    "gemini": ("503", LlmHttpError, 503),
    "bedrock-converse": ("throttlingException", LlmRateLimited, 429),
    "bedrock-invoke": ("overloaded_error", LlmHttpError, 500),
}


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_event_part_way_ends_the_call_with_todays_error(kind: str) -> None:
    name, error_type, status = ERRORS[kind]

    async def body(fake: StreamFake, model: Model) -> None:
        fake.enqueue(Script(text="one two three four five", error_after=2, error=(name, "the model fell over")))
        deltas: list[TextDelta] = []
        with pytest.raises(error_type) as caught:
            await model.complete(HELLO, [], on_delta=deltas.append)
        assert type(caught.value) is error_type
        assert isinstance(caught.value, LlmHttpError) and caught.value.status == status
        assert "the model fell over" in str(caught.value)
        assert answer(deltas) == "one two "
        assert len(fake.requests) == 1, "no retry once a reply has begun"

    run(kind, body)


def test_without_a_sink_the_call_is_not_streamed() -> None:
    async def body(fake: StreamFake, model: Model) -> None:
        fake.enqueue(Script(text=TEXT))
        assert (await model.complete(HELLO, [])).text == TEXT
        assert fake.requests[-1].body["stream"] is False and "stream_options" not in fake.requests[-1].body

    run("openai", body)


@pytest.mark.parametrize("kind", ["openai", "bedrock-converse"])
def test_a_client_that_goes_away_closes_the_provider_connection_at_once(kind: str) -> None:
    async def body(fake: StreamFake, model: Model) -> None:
        fake.enqueue(Script(text=" ".join(f"word{i}" for i in range(100))))
        first = asyncio.Event()

        def sink(delta: TextDelta) -> None:
            first.set()

        task = asyncio.create_task(model.complete(HELLO, [], on_delta=sink))
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The bound: the fake sees its connection closed within a second.
        await asyncio.wait_for(fake.closed.wait(), 1.0)
        assert fake.connections_closed == 1
        assert fake.replies_finished == 0 and fake.events_written < fake.events_total

    run(kind, body, pace=0.05)


def test_a_stream_that_stops_short_is_a_connection_failure() -> None:
    stream = OpenAIStream(lambda delta: None, "openai")
    stream.feed(SseEvent("message", '{"choices":[{"index":0,"delta":{"content":"half"}}]}'))
    with pytest.raises(LlmConnectionError, match="ended before the reply was complete"):
        stream.reply()


def test_sse_decoder_reads_events_cut_anywhere() -> None:
    raw = (
        ": keep-alive\r\n\r\n"
        "event: one\r\ndata: {\"t\": \"é🙂\"}\r\n\r\n"
        "data: first line\ndata:second line\n\n"
        "id: 7\rdata: cr only\r\r"
        "data: no blank line at the end"
    ).encode()
    expected = [
        SseEvent("one", '{"t": "é🙂"}'),
        SseEvent("message", "first line\nsecond line"),
        SseEvent("message", "cr only"),
        SseEvent("message", "no blank line at the end"),
    ]
    for sizes in [(1,), (2,), (3, 1), (7,), (len(raw),)]:
        decoder = SseDecoder()
        events = [event for chunk in awkward_chunks(raw, sizes) for event in decoder.feed(chunk)]
        assert events + decoder.close() == expected, sizes


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_server_that_answers_whole_is_read_whole_as_one_delta(protocol: str) -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={})
        try:
            model = factory.create(fake.llm_config(protocol))  # type: ignore[arg-type]
            fake.enqueue(Reply.answer(TEXT))
            response, deltas = await streamed(model)
            assert fake.requests[-1].body["stream"] is True  # asked to stream; answered whole JSON
            assert deltas == [TextDelta(TEXT)] and response.text == TEXT
        finally:
            await factory.aclose()

    run_with_fake_llm(body)


@pytest.mark.parametrize("kind", ["bedrock-converse", "bedrock-invoke"])
def test_bedrock_streams_are_signed_for_their_own_path(kind: str) -> None:
    aws = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "eu-west-3")
    model = {"bedrock-converse": "amazon.nova-lite-v1:0", "bedrock-invoke": "anthropic.claude-fake-v1:0"}[kind]

    async def main() -> None:
        factory = LlmFactory(env={})
        async with StreamFake(aws=aws) as fake:
            config = fake.llm_config(kind, model_name=model, aws_access_key_id=aws[0],
                                     aws_secret_access_key=aws[1], region_name=aws[2])  # fmt: skip
            try:
                fake.enqueue(Script(text=TEXT))
                response, deltas = await streamed(factory.create(config))
            finally:
                await factory.aclose()
        assert answer(deltas) == response.text == TEXT  # the fake checked the signature (403 otherwise)
        suffix = "/converse-stream" if kind == "bedrock-converse" else "/invoke-with-response-stream"
        assert fake.requests[-1].path == f"/model/{model}{suffix}"

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_that_ends_before_its_last_event_is_a_connection_failure(kind: str) -> None:
    async def body(fake: StreamFake, model: Model) -> None:
        fake.enqueue(Script(text="one two three four", stop_after=4))
        with pytest.raises(LlmConnectionError, match="ended before the reply was complete"):
            await streamed(model)

    run(kind, body)
