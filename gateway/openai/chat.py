"""``POST /v1/chat/completions``: one chat of the agents facade per request.

``model`` names the network; the last user message is the turn and the earlier messages
are its history (``Turn.history``: the client owns it, as OpenAI's API defines). The chat
runs with the MAXIMAL filter, which is where the service reports its token accounting
(``usage``) and the network's thinking (``reasoning_content``). With ``stream: true`` the
answer's token deltas go out as ``chat.completion.chunk`` events as they are written.
"""

from __future__ import annotations

import contextlib
from typing import Any

from aiohttp import web

from gateway.agents.interface import Agents, Answer, AnswerDelta, Caller, ChatFailed, InvalidTurn, Step, Turn
from gateway.host.responses import dumps, json_response
from gateway.openai import shapes
from gateway.openai.errors import OpenAiError, from_chat_failed, invalid
from gateway.openai.params import CHAT_RULES, conversation_of, required_model, sly_data_of, stream_usage
from gateway.openai.sse import EventWriter, paced

_DONE = b"data: [DONE]\n\n"


def _turn(body: dict[str, Any]) -> tuple[str, Turn, bool, bool]:
    """(model, turn, stream, include_usage) of a request body; 400s for what does not fit."""
    CHAT_RULES.check(body)
    model = required_model(body)
    conversation = conversation_of(body.get("messages"), "messages", ("text",))
    stream = bool(body.get("stream"))
    include_usage = stream_usage(body)
    turn = Turn({"type": "HUMAN", "text": conversation.user_text}, sly_data=sly_data_of(body),
                chat_filter="MAXIMAL", stream_tokens=stream, history=conversation.history, agent_usage=False)
    return model, turn, stream, include_usage


async def chat_completions(
    request: web.Request, body: dict[str, Any], agents: Agents, caller: Caller, heartbeat_seconds: float
) -> web.StreamResponse:
    model, turn, stream, include_usage = _turn(body)
    try:
        chat = agents.chat(model, turn, caller)
    except InvalidTurn as error:
        raise invalid(str(error), error.field or "messages") from None
    async with chat:
        if stream:
            return await _streamed(request, chat, model, include_usage, heartbeat_seconds)
        reasoning: list[str] = []
        async for event in chat:
            if isinstance(event, Step):
                reasoning.append(shapes.thinking(event))
            elif isinstance(event, ChatFailed):
                raise from_chat_failed(event, model)
            elif isinstance(event, Answer):
                body_out = shapes.completion(shapes.new_id("chatcmpl-"), shapes.now(), model, event,
                                             "".join(reasoning))
                return json_response(200, dumps(body_out))
    raise OpenAiError(502, "the network ended without an answer")


async def _streamed(
    request: web.Request, chat: Any, model: str, include_usage: bool, heartbeat_seconds: float
) -> web.StreamResponse:
    completion_id, created = shapes.new_id("chatcmpl-"), shapes.now()
    writer: EventWriter | None = None
    streamed = ""
    async with contextlib.aclosing(paced(chat, heartbeat_seconds)) as events:
        async for event in events:
            if writer is None:
                if isinstance(event, ChatFailed):  # refused before anything was said: a real status
                    raise from_chat_failed(event, model)
                writer = EventWriter(request)
                await writer.open()
                await writer.send(shapes.chunk(completion_id, created, model, {"role": "assistant", "content": ""}))
            if event is None:
                await writer.heartbeat()
            elif isinstance(event, AnswerDelta):
                streamed += event.text
                await writer.send(shapes.chunk(completion_id, created, model, {"content": event.text}))
            elif isinstance(event, Step):
                thought = shapes.thinking(event)
                if thought:
                    await writer.send(shapes.chunk(completion_id, created, model, {"reasoning_content": thought}))
            elif isinstance(event, ChatFailed):
                # Mid-stream: OpenAI's SDKs raise an APIError for a chunk that is an error.
                await writer.send(from_chat_failed(event, model).body())
                break
            elif isinstance(event, Answer):
                # What the deltas did not say (a reply that was not streamed, the runtime's
                # truncation caveat appended to it) goes out before the end.
                rest = event.text[len(streamed):] if event.text.startswith(streamed) else ""
                if rest:
                    await writer.send(shapes.chunk(completion_id, created, model, {"content": rest}))
                last = shapes.chunk(completion_id, created, model, {}, shapes.finish_reason(event))
                await writer.send(shapes.with_sly_data(last, event))
                if include_usage:
                    await writer.send(shapes.chunk(completion_id, created, model, None, usage=shapes.chat_usage(event)))
                break
    if writer is None:
        raise OpenAiError(502, "the network ended without an answer")
    return await writer.close(_DONE)
