"""The OpenAI-compatible API through OpenAI's own Python SDK, against a real server.

An in-process server (tests/gateway/openai/rig.py: networks on the streaming provider
fake over real HTTP, the HTTP port as ``serve`` composes it) and ``openai.AsyncOpenAI``
with ``base_url=…/v1``. Checked: the models the caller may see (a private network is no
model without a key naming it), chat completions with and without ``stream`` (deltas,
``include_usage``, the first delta before the model has finished), the client's history
reaching the front man, sly_data in and out, the network's thinking as
``reasoning_content``, Responses with ``previous_response_id``, its event stream,
retrieve and delete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes.stream_wire import Script
from tests.gateway.openai.rig import ANSWER, Rig, sent_messages, served

pytestmark = pytest.mark.slow

Body = Callable[[Rig, openai.AsyncOpenAI], Awaitable[None]]


def run(tmp_path: Path, body: Body, **options: object) -> None:
    async def main() -> None:
        async with served(tmp_path, **options) as rig:  # type: ignore[arg-type]
            client = openai.AsyncOpenAI(base_url=rig.v1, api_key="unused", max_retries=0)
            async with client:
                await asyncio.wait_for(body(rig, client), 60)

    asyncio.run(main())


def test_models_are_the_networks_the_caller_may_see(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        models = [m async for m in client.models.list()]
        names = {m.id for m in models}
        assert {"talker", "keeper", "deep"} <= names
        assert "secret" not in names  # private: a model only for a key that names it
        assert all(m.object == "model" and m.owned_by == "neuro-san" and m.created > 0 for m in models)
        assert (await client.models.retrieve("talker")).id == "talker"
        with pytest.raises(openai.NotFoundError) as missing:
            await client.models.retrieve("secret")
        assert missing.value.code == "model_not_found"

    run(tmp_path, body)


def test_a_chat_completion_answers_with_usage(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER, usage=(11, 7)))
        completion = await client.chat.completions.create(
            model="talker", messages=[{"role": "user", "content": "question?"}])
        choice = completion.choices[0]
        assert choice.message.content == ANSWER and choice.message.role == "assistant"
        assert choice.finish_reason == "stop"
        assert completion.object == "chat.completion" and completion.model == "talker"
        assert completion.usage is not None
        assert (completion.usage.prompt_tokens, completion.usage.completion_tokens,
                completion.usage.total_tokens) == (11, 7, 18)

    run(tmp_path, body)


def test_a_cut_off_answer_finishes_with_length(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text="The answer is", truncated=True))
        completion = await client.chat.completions.create(
            model="talker", messages=[{"role": "user", "content": "question?"}])
        assert completion.choices[0].finish_reason == "length"

    run(tmp_path, body)


def test_the_earlier_messages_are_the_front_mans_history(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER))
        await client.chat.completions.create(model="talker", messages=[
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": [{"type": "text", "text": "second "}, {"type": "text", "text": "question"}]},
        ])
        sent = [m for m in sent_messages(rig.fake) if m[0] != "system"]
        assert sent == [("user", "first question"), ("assistant", "first answer"), ("user", "second question")]

    run(tmp_path, body)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "AGENT_CHAT_CONTEXT_KEY"])
def test_history_works_whether_chat_contexts_are_signed_or_not(tmp_path: Path, signed: bool) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER))
        await client.chat.completions.create(model="talker", messages=[
            {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"}])
        assert ("assistant", "a1") in sent_messages(rig.fake)

    run(tmp_path, body, chat_context_key=b"k" * 32 if signed else None)


def test_a_stream_sends_the_deltas_as_they_are_written(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER, usage=(11, 7)))
        stream = await client.chat.completions.create(
            model="talker", messages=[{"role": "user", "content": "question?"}], stream=True,
            stream_options={"include_usage": True})
        pieces: list[str] = []
        written_at_first = None
        finish = None
        usage = None
        async for chunk in stream:
            assert chunk.object == "chat.completion.chunk"
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta.content:
                    if written_at_first is None:
                        written_at_first = (rig.fake.events_written, rig.fake.events_total)
                    pieces.append(choice.delta.content)
                finish = choice.finish_reason or finish
        assert "".join(pieces) == ANSWER
        assert len(pieces) > 1
        assert written_at_first is not None and written_at_first[0] < written_at_first[1]
        assert finish == "stop"
        assert usage is not None and usage.total_tokens == 18

    run(tmp_path, body, pace=0.05)


def test_sly_data_goes_in_and_comes_out_as_the_network_allows(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER))
        completion = await client.chat.completions.create(
            model="keeper", messages=[{"role": "user", "content": "question?"}],
            extra_body={"sly_data": {"ticket": "T-1", "password": "hunter2"}})
        assert completion.model_extra is not None
        assert completion.model_extra["sly_data"] == {"ticket": "T-1"}
        assert "hunter2" not in str(rig.fake.requests[-1].body)  # never shown to the LLM

    run(tmp_path, body)


def test_the_networks_thinking_streams_as_reasoning_content(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(
            Script(tool_calls=(("call-1", "helper", {"question": "what?"}),)),
            Script(text="helper says 42"),
            Script(text=ANSWER),
        )
        stream = await client.chat.completions.create(
            model="deep", messages=[{"role": "user", "content": "question?"}], stream=True)
        reasoning, content = [], []
        async for chunk in stream:
            for choice in chunk.choices:
                extra = choice.delta.model_extra or {}
                if extra.get("reasoning_content"):
                    reasoning.append(extra["reasoning_content"])
                if choice.delta.content:
                    content.append(choice.delta.content)
        assert ANSWER in "".join(content)
        assert "helper says 42" in "".join(reasoning)

    run(tmp_path, body)


def test_a_response_continues_from_its_previous_one(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text="first answer"), Script(text=ANSWER))
        first = await client.responses.create(model="talker", input="first question")
        assert first.output_text == "first answer" and first.status == "completed"
        second = await client.responses.create(model="talker", input="second question",
                                               previous_response_id=first.id)
        assert second.output_text == ANSWER and second.previous_response_id == first.id
        sent = [m for m in sent_messages(rig.fake) if m[0] != "system"]
        assert sent == [("user", "first question"), ("assistant", "first answer"), ("user", "second question")]
        assert second.usage is not None and second.usage.total_tokens == 18
        kept = await client.responses.retrieve(second.id)
        assert kept.output_text == ANSWER
        await client.responses.delete(second.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(second.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.create(model="talker", input="again", previous_response_id=second.id)

    run(tmp_path, body, chat_context_key=b"k" * 32)


def test_another_callers_response_is_not_found(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        first = await client.responses.create(model="talker", input="hello")
        async with openai.AsyncOpenAI(base_url=rig.v1, api_key="someone-else", max_retries=0) as other:
            with pytest.raises(openai.NotFoundError):
                await other.responses.retrieve(first.id)
            with pytest.raises(openai.NotFoundError):
                await other.responses.create(model="talker", input="hi", previous_response_id=first.id)

    run(tmp_path, body)


def test_responses_stream_their_events_in_order(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER))
        stream = await client.responses.create(model="talker", input="question?", stream=True)
        events = [event async for event in stream]
        kinds = [e.type for e in events]
        assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                             "response.content_part.added"]
        assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                              "response.output_item.done", "response.completed"]
        deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
        assert "".join(deltas) == ANSWER and len(deltas) > 1
        assert [e.sequence_number for e in events] == list(range(len(events)))
        completed = events[-1].response  # type: ignore[union-attr]
        assert completed.output_text == ANSWER
        nxt = await client.responses.create(model="talker", input="more?", previous_response_id=completed.id)
        assert nxt.status == "completed"

    run(tmp_path, body, pace=0.02)


def test_a_client_that_stops_reading_cancels_the_chat(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=" ".join([ANSWER] * 6)))
        stream = await client.chat.completions.create(
            model="talker", messages=[{"role": "user", "content": "question?"}], stream=True)
        async for chunk in stream:
            if any(choice.delta.content for choice in chunk.choices):
                break
        await stream.close()
        await asyncio.wait_for(rig.fake.closed.wait(), 10)  # the provider connection closed…
        assert rig.fake.replies_finished == 0  # …before its reply was over

    run(tmp_path, body, pace=0.1)


def test_store_false_keeps_nothing_and_metadata_is_kept(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        kept = await client.responses.create(model="talker", input="hello", metadata={"case": "42"})
        assert (await client.responses.retrieve(kept.id)).metadata == {"case": "42"}
        unkept = await client.responses.create(model="talker", input="hello", store=False)
        assert unkept.status == "completed" and unkept.to_dict().get("store") is False
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(unkept.id)

    run(tmp_path, body)


def test_earlier_input_items_are_the_history_of_a_first_response(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER))
        items: list[Any] = [
            {"role": "user", "content": "first question"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "first answer"}]},
            {"role": "user", "content": [{"type": "input_text", "text": "second question"}]},
        ]
        response = await client.responses.create(model="talker", input=items)
        assert response.output_text == ANSWER
        sent = [m for m in sent_messages(rig.fake) if m[0] != "system"]
        assert sent == [("user", "first question"), ("assistant", "first answer"), ("user", "second question")]
        with pytest.raises(openai.BadRequestError):  # with a previous response, only the new message
            await client.responses.create(model="talker", previous_response_id=response.id, input=[
                {"role": "assistant", "content": "made up"}, {"role": "user", "content": "and?"}])
        with pytest.raises(openai.BadRequestError):  # another network cannot continue it
            await client.responses.create(model="keeper", previous_response_id=response.id, input="and?")

    run(tmp_path, body)


def test_a_failure_mid_stream_is_an_error_the_sdk_raises(tmp_path: Path) -> None:
    async def body(rig: Rig, client: openai.AsyncOpenAI) -> None:
        rig.fake.enqueue(Script(text=ANSWER, error_after=3))
        stream = await client.chat.completions.create(
            model="talker", messages=[{"role": "user", "content": "question?"}], stream=True)
        pieces: list[str] = []
        with pytest.raises(openai.APIError) as failed:
            async for chunk in stream:
                pieces.extend(c.delta.content or "" for c in chunk.choices)
        assert "".join(pieces)  # the deltas before the failure arrived
        assert failed.value.message

        rig.fake.enqueue(Script(text=ANSWER, error_after=3))
        events = await client.responses.create(model="talker", input="question?", stream=True)
        kinds = [event.type async for event in events]
        assert kinds[0] == "response.created" and kinds[-1] == "response.failed"

    run(tmp_path, body, pace=0.02)
