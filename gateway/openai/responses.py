"""``/v1/responses``: a turn that the server remembers by its response's id.

``input`` is text or message items; without ``previous_response_id`` the items before the
last user message are the turn's history (``Turn.history``), with it the conversation goes
on from the chat_context kept under that id (signed as every chat_context when
``AGENT_CHAT_CONTEXT_KEY`` is set). What is kept lives in the shared state
(:class:`~gateway.state.conversations.ConversationStore`, its own namespace): on Redis
with ``AGENT_REDIS_URL``, so any replica behind a balancer continues it; ids are scoped to
the caller's credentials (:func:`~gateway.state.conversations.scoped_id`), so one caller
cannot read or continue another's. ``store: false`` keeps nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from gateway.agents.interface import Agents, Answer, AnswerDelta, Caller, ChatFailed, InvalidTurn, Turn
from gateway.host.responses import dumps, json_response
from gateway.openai import shapes
from gateway.openai.errors import OpenAiError, from_chat_failed, invalid
from gateway.openai.params import RESPONSES_RULES, Conversation, conversation_of, required_model, sly_data_of
from gateway.openai.sse import EventWriter, paced
from gateway.state.conversations import ConversationStore, scoped_id
from gateway.state.interface import StateUnavailable
from neuro_san.core.errors import echo

NAMESPACE = "openai-responses"
_PARTS = ("input_text", "output_text", "text")
_ITEM_KEYS = frozenset({"type", "role", "content", "id", "status"})


def owner_of(headers: Mapping[str, str]) -> str:
    """A stable, non-reversible scope for the caller's credentials ("" without any)."""
    secret = headers.get("authorization") or headers.get("x-api-key") or ""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:32] if secret else ""


def _item(item: dict[str, Any], where: str) -> None:
    kind = item.get("type", "message")
    if kind != "message":
        shown = echo(kind) if isinstance(kind, str) else "not a string"
        raise invalid(f"'{where}.type' is {shown}: only message items are supported", where, "unsupported_item")
    unknown = set(item) - _ITEM_KEYS
    if unknown:
        raise invalid(f"'{where}.{sorted(unknown)[0][:100]}' is not supported", where, "unknown_parameter")


def _conversation(value: Any) -> Conversation:
    if isinstance(value, str):
        if not value.strip():
            raise invalid("'input' has no text", "input")
        return Conversation(value, ())
    return conversation_of(value, "input", _PARTS, _item)


class ResponsesApi:
    """The three routes over one store."""

    def __init__(self, agents: Agents, store: ConversationStore, heartbeat_seconds: float) -> None:
        self._agents = agents
        self._store = store
        self._heartbeat = heartbeat_seconds

    async def create(self, request: web.Request, body: dict[str, Any], caller: Caller) -> web.StreamResponse:
        RESPONSES_RULES.check(body)
        model = required_model(body)
        conversation = _conversation(body.get("input"))
        previous = body.get("previous_response_id")
        owner = owner_of(request.headers)
        context: dict[str, Any] | None = None
        if previous is not None:
            if conversation.history:
                raise invalid("with 'previous_response_id', 'input' is the new user message only", "input")
            kept = await self._kept(owner, previous)
            if kept.get("model") != model:
                raise invalid(f"'previous_response_id' continues a conversation with {echo(kept.get('model'))}, "
                              f"not {echo(model)}", "previous_response_id")
            context = kept.get("chat_context")
        stream = bool(body.get("stream"))
        turn = Turn({"type": "HUMAN", "text": conversation.user_text}, chat_context=context,
                    sly_data=sly_data_of(body), chat_filter="MAXIMAL", stream_tokens=stream,
                    history=conversation.history, agent_usage=False)
        store = body.get("store", True) is not False
        started = _Started(shapes.new_id("resp_"), shapes.now(), model, previous, store, body.get("metadata"),
                           shapes.new_id("msg_"))
        try:
            chat = self._agents.chat(model, turn, caller)
        except InvalidTurn as error:
            raise invalid(str(error), "input") from None
        async with chat:
            if not stream:
                async for event in chat:
                    if isinstance(event, ChatFailed):
                        raise from_chat_failed(event, model)
                    if isinstance(event, Answer):
                        done = started.response("completed", event)
                        await self._keep(owner, started, done, event)
                        return json_response(200, dumps(done))
                raise OpenAiError(502, "the network ended without an answer")
            return await self._streamed(request, chat, started, owner)

    async def _streamed(self, request: web.Request, chat: Any, started: _Started, owner: str) -> web.StreamResponse:
        writer: EventWriter | None = None
        sequence = 0
        streamed = ""
        ids = {"item_id": started.item_id, "output_index": 0, "content_index": 0}

        async def send(kind: str, **fields: Any) -> None:
            nonlocal sequence
            assert writer is not None
            await writer.send({"type": kind, "sequence_number": sequence, **fields}, kind)
            sequence += 1

        async with contextlib.aclosing(paced(chat, self._heartbeat)) as events:
            async for event in events:
                if writer is None:
                    if isinstance(event, ChatFailed):
                        raise from_chat_failed(event, started.model)
                    writer = EventWriter(request)
                    await writer.open()
                    await send("response.created", response=started.response("in_progress"))
                    await send("response.in_progress", response=started.response("in_progress"))
                    await send("response.output_item.added", output_index=0,
                               item=shapes.message_item(started.item_id, None, "in_progress"))
                    await send("response.content_part.added", **ids, part=shapes.output_text(""))
                if event is None:
                    await writer.heartbeat()
                elif isinstance(event, AnswerDelta):
                    streamed += event.text
                    await send("response.output_text.delta", **ids, delta=event.text, logprobs=[])
                elif isinstance(event, ChatFailed):
                    error = from_chat_failed(event, started.model)
                    await send("response.failed", response=started.response(
                        "failed", error={"code": error.code or "server_error", "message": error.message}))
                    break
                elif isinstance(event, Answer):
                    rest = event.text[len(streamed):] if event.text.startswith(streamed) else ""
                    if rest:
                        await send("response.output_text.delta", **ids, delta=rest, logprobs=[])
                    await send("response.output_text.done", **ids, text=event.text, logprobs=[])
                    await send("response.content_part.done", **ids, part=shapes.output_text(event.text))
                    await send("response.output_item.done", output_index=0,
                               item=shapes.message_item(started.item_id, event.text, "completed"))
                    done = started.response("completed", event)
                    try:  # kept before the client hears it is done, so its next turn finds it
                        await self._keep(owner, started, done, event)
                    except OpenAiError as error:
                        await send("response.failed", response=started.response(
                            "failed", error={"code": error.code, "message": error.message}))
                        break
                    await send("response.incomplete" if done["status"] == "incomplete" else "response.completed",
                               response=done)
                    break
        if writer is None:
            raise OpenAiError(502, "the network ended without an answer")
        return await writer.close()

    async def get(self, request: web.Request, response_id: str) -> web.Response:
        kept = await self._kept(owner_of(request.headers), response_id, param=None)
        return json_response(200, dumps(kept["response"]))

    async def delete(self, request: web.Request, response_id: str) -> web.Response:
        owner = owner_of(request.headers)
        await self._kept(owner, response_id, param=None)
        # The shared state has no delete: a tombstone in its place, expiring as the rest.
        await self._guarded(self._store.put(scoped_id(owner, "", response_id), {"deleted": True}))
        return json_response(200, dumps({"id": response_id, "object": "response", "deleted": True}))

    async def _kept(self, owner: str, response_id: str, param: str | None = "previous_response_id") -> dict[str, Any]:
        document = await self._guarded(self._store.get(scoped_id(owner, "", response_id)))
        if not isinstance(document, dict) or document.get("deleted") or "response" not in document:
            raise OpenAiError(404, f"Response with id {echo(response_id)} not found.", param=param,
                              code="response_not_found")
        return document

    async def _keep(self, owner: str, started: _Started, done: dict[str, Any], answer: Answer) -> None:
        if not started.store:
            return
        document = {"model": started.model, "response": done, "chat_context": dict(answer.chat_context or {})}
        await self._guarded(self._store.put(scoped_id(owner, "", started.response_id), document))

    @staticmethod
    async def _guarded(operation: Any) -> Any:
        try:
            return await operation
        except StateUnavailable:
            raise OpenAiError(503, "the shared state (Redis) is unavailable; retry shortly",
                              code="state_unavailable") from None


class _Started:
    """What a response is before its answer: ids, time, the request's options."""

    def __init__(
        self, response_id: str, created: int, model: str, previous: str | None, store: bool,
        metadata: Mapping[str, str] | None, item_id: str,
    ) -> None:
        self.response_id, self.created, self.model = response_id, created, model
        self.previous, self.store, self.metadata, self.item_id = previous, store, metadata, item_id

    def response(
        self, status: str, answer: Answer | None = None, error: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return shapes.response_object(self.response_id, self.created, self.model, status=status,
                                      previous=self.previous, store=self.store, metadata=self.metadata,
                                      item_id=self.item_id, answer=answer, error=error)
