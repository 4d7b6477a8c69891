"""The facade over the invoker: one turn = one ``AgentService/StreamingChat`` call; the
directory is ``DirectoryService/List`` (every network the caller may see, with its function
and MCP tool name, in one call) and ``AgentService/Function``.

This is the one place of the HTTP port's protocol front-ends that reads the chat stream:
which message types are answer pieces, steps or the answer, what of them a front-end
gets, and how a failed call reads (``grpc.aio.AioRpcError`` → :class:`ChatFailed`), and the
one place that turns a :class:`Caller`'s rules into the metadata the service reads. The
JSON forms are the transcoder's (:class:`~gateway.transcoder.marshal.MessageCodec`), the
same as REST's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf import json_format
from neuro_san.api.grpc import agent_pb2, chat_pb2, directory_pb2

from gateway.agents.deferred import Deferred, StructFields
from gateway.agents.interface import (
    AgentDescription,
    Agents,
    AgentsFailed,
    AgentSummary,
    Answer,
    AnswerDelta,
    Caller,
    ChatEvent,
    ChatFailed,
    ChatStream,
    HistoryMessage,
    InvalidTurn,
    Listing,
    Step,
    Turn,
)
from gateway.host.errors import GatewayError, rpc_failure
from gateway.transcoder.marshal import MessageCodec, struct_json
from neuro_san.core.access import PRIVATE_NAMED_ONLY_METADATA_KEY, PUBLIC_DIRECTORY_METADATA_KEY
from neuro_san.core.internal_metadata import (
    CLIENT_HISTORY_KEY,
    LEAN_STREAM_KEY,
    LEAVE_OUT_AGENT_USAGE,
    LEAVE_OUT_INPUTS,
)
from neuro_san.core.messages import CLIENT_HISTORY_TOOL

if TYPE_CHECKING:
    from gateway.host.frontends import FrontEndContext

#: Seconds a directory call (List, Function) may take, unless the front-end says otherwise.
LOOKUP_SECONDS = 10.0

_REQUEST_CODEC = MessageCodec(agent_pb2.ChatRequest)
#: An answer's chat_context in its JSON form, which the front-ends keep and send back.
_CONTEXT_CODEC = MessageCodec(chat_pb2.ChatContext)
_Type = chat_pb2.ChatMessage
#: What is a step, by name; SYSTEM (the prompt) and HUMAN (the user's own text) are no news to the client.
_STEP_NAMES = {kind: _Type.ChatMessageType.Name(kind)
               for kind in (_Type.AI, _Type.AGENT, _Type.AGENT_TOOL_RESULT, _Type.AGENT_PROGRESS)}
_HISTORY_TYPES = {"user": "HUMAN", "assistant": "AI"}


def chat_request(turn: Turn) -> agent_pb2.ChatRequest:
    """The ChatRequest of ``turn``; raises :class:`InvalidTurn` naming what is wrong."""
    data: dict[str, Any] = {"user_message": dict(turn.user_message)}
    if turn.history:
        if turn.chat_context is not None:
            raise InvalidTurn("a turn carries a chat_context or a history, not both", "history")
        data["chat_context"] = _client_history(turn.history)
    strict_context: chat_pb2.ChatContext | None = None
    if turn.strict_context and turn.chat_context is not None:
        # Parsed once, strictly (unknown fields and enum names refused), and used as it is.
        strict_context = chat_pb2.ChatContext()
        try:
            json_format.ParseDict(dict(turn.chat_context), strict_context)
        except json_format.ParseError as error:
            raise InvalidTurn(str(error), "chat_context") from None
    elif turn.chat_context is not None:
        data["chat_context"] = dict(turn.chat_context)
    if turn.sly_data is not None:
        data["sly_data"] = dict(turn.sly_data)
    if turn.chat_filter is not None:
        data["chat_filter"] = {"chat_filter_type": turn.chat_filter}
    if turn.stream_tokens:
        data["stream_tokens"] = True
    message = agent_pb2.ChatRequest()
    try:
        _REQUEST_CODEC.fill(_REQUEST_CODEC.normalize(data), message)
    except GatewayError as error:
        raise InvalidTurn(error.message) from None
    if strict_context is not None:
        message.chat_context.CopyFrom(strict_context)
    return message


def _client_history(history: tuple[HistoryMessage, ...]) -> dict[str, Any]:
    """The chat_context of a client-owned history: its one history under the reserved
    origin, which the service restores as the front man's only on our word
    (:data:`~neuro_san.core.internal_metadata.CLIENT_HISTORY_KEY`, added by ``chat``)."""
    messages = []
    for message in history:
        if message.role not in _HISTORY_TYPES:
            raise InvalidTurn(f"a history message's role is 'user' or 'assistant', not {message.role!r}", "history")
        messages.append({"type": _HISTORY_TYPES[message.role], "text": message.text})
    return {"chat_histories": [{"origin": [{"tool": CLIENT_HISTORY_TOOL}], "messages": messages}]}


def is_usage_report(origin_length: int, structure: Any) -> bool:
    """Whether a step is the request's token total (``runtime/usage_report.py``: the front
    man's last report, the one with ``models``)."""
    return origin_length == 1 and isinstance(structure, Mapping) and "models" in structure \
        and "total_tokens" in structure


def event_of(reply: agent_pb2.ChatResponse) -> ChatEvent | None:
    """The event one response is, or None when it is nothing a front-end is told.

    Read field by field rather than through the message's whole JSON form: a MAXIMAL chat
    sends half a dozen such messages, and their dicts (the echoed request's and the
    history's included) cost more than the rest of the front-end's work. What a field holds
    is its JSON form all the same (``struct_json``, the chat_context's codec), so a front-end
    gets what REST would have sent."""
    message = reply.response
    kind = message.type
    if kind == _Type.TOKEN_DELTA:
        # Only the front man's answer; reasoning and sub-agents' deltas are dropped.
        if len(message.origin) == 1 and message.delta_kind == _Type.ANSWER and message.text:
            return AnswerDelta(message.text)
        return None
    if kind == _Type.AGENT_FRAMEWORK:
        context = message.chat_context
        # Read when a front-end reads it (the OpenAI API never does: the client owns its history).
        return Answer(message.text, _structure(message, "structure"),
                      Deferred(lambda: _CONTEXT_CODEC.to_dict(context)) if message.HasField("chat_context") else None,
                      _structure(message, "sly_data") or {})
    name = _STEP_NAMES.get(kind)
    if name is None:
        return None
    if kind == _Type.AGENT and not message.text and "total_tokens" in message.structure.fields:
        # A token report: front-ends read a few of its values, if any.
        report = StructFields(message.structure)
        return Step(name, tuple(o.tool for o in message.origin), "", report, *_tool_parts(report),
                    result_of=tuple(o.tool for o in message.tool_result_origin))
    structure = _structure(message, "structure")
    return Step(name, tuple(o.tool for o in message.origin), message.text, structure, *_tool_parts(structure),
                result_of=tuple(o.tool for o in message.tool_result_origin))


def _structure(message: chat_pb2.ChatMessage, field: str) -> dict[str, Any] | None:
    return struct_json(getattr(message, field)) if message.HasField(field) else None


def _tool_parts(structure: Any) -> tuple[Any, Any]:
    """(arguments, result) of a tool call's "Received arguments:" / "Got result:" message
    (runtime/journal_shapes.py)."""
    if not isinstance(structure, Mapping):
        return None, None
    arguments = structure.get("tool_args") if structure.get("tool_start") else None
    result = structure.get("tool_output") if structure.get("tool_end") else None
    return arguments, result


class _InvokedChat(ChatStream):
    """One StreamingChat call read as events; cancelled when the reader stops."""

    def __init__(self, start: Callable[[], Any]) -> None:
        self._start = start
        self._call: Any = None
        self._over = False
        self._usage: Mapping[str, Any] | None = None

    async def __anext__(self) -> ChatEvent:
        if self._over:
            raise StopAsyncIteration
        if self._call is None:
            self._call = self._start()
        try:
            while (reply := await self._call.read()) is not grpc.aio.EOF:
                event = event_of(reply)
                if isinstance(event, Step) and is_usage_report(len(event.origin), event.structure):
                    self._usage = event.structure
                elif isinstance(event, Answer) and self._usage is not None:
                    event = dataclasses.replace(event, usage=self._usage)
                if event is not None:
                    return event
        except grpc.aio.AioRpcError as error:
            self._over = True
            return ChatFailed(rpc_failure(error))
        except BaseException:
            self._stop()  # the reader was cancelled: stop the chat and its LLM calls
            raise
        self._over = True
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._stop()

    def _stop(self) -> None:
        self._over = True
        if self._call is not None and not self._call.done():
            self._call.cancel()


def caller_metadata(caller: Caller) -> list[tuple[str, str | bytes]]:
    """The metadata that carries ``caller``'s rules to the service (the keys only
    front-ends may set: the service believes them from the gateway alone)."""
    metadata = list(caller.metadata)
    if caller.private_named_only:
        metadata.append((PRIVATE_NAMED_ONLY_METADATA_KEY, "true"))
    if caller.public_directory:
        metadata.append((PUBLIC_DIRECTORY_METADATA_KEY, "true"))
    return metadata


def _struct(value: Any) -> dict[str, Any] | None:
    return json_format.MessageToDict(value) if value.ListFields() else None


def _description(agent: str, function: agent_pb2.Function) -> AgentDescription:
    return AgentDescription(agent, str(function.description), _struct(function.parameters),
                            _struct(function.sly_data_schema))


class InvokedAgents(Agents):
    """Agents reached through the invoker's callables (``FrontEndContext.method``):
    ``StreamingChat`` for chats, ``DirectoryService/List`` and ``AgentService/Function``
    for the directory (``lookup_seconds`` bounds those)."""

    def __init__(
        self, streaming_chat: Callable[..., Any], deadline_seconds: float | None, *,
        directory_list: Callable[..., Any] | None = None, function: Callable[..., Any] | None = None,
        lookup_seconds: float = LOOKUP_SECONDS,
    ) -> None:
        self._streaming_chat = streaming_chat
        self._deadline = deadline_seconds
        self._list = directory_list
        self._function = function
        self._lookup = lookup_seconds

    @classmethod
    def of(cls, context: FrontEndContext, lookup_seconds: float = LOOKUP_SECONDS) -> InvokedAgents:
        """The facade over a front-end's invoker: what every protocol front-end uses."""
        return cls(context.method("AgentService", "StreamingChat"), context.config.max_timeout_seconds,
                   directory_list=context.method("DirectoryService", "List"),
                   function=context.method("AgentService", "Function"), lookup_seconds=lookup_seconds)

    def chat(self, agent: str, turn: Turn, caller: Caller) -> ChatStream:
        request = chat_request(turn)
        # No SYSTEM/HUMAN messages nor request echoes (event_of drops them), and no token
        # reports the turn does not want; a server that does not trust this gateway ignores
        # the key and sends them all the same.
        lean = LEAVE_OUT_INPUTS if turn.agent_usage else f"{LEAVE_OUT_INPUTS},{LEAVE_OUT_AGENT_USAGE}"
        metadata = [*caller_metadata(caller), ("agent-name", agent), (LEAN_STREAM_KEY, lean)]
        if turn.history:
            metadata.append((CLIENT_HISTORY_KEY, "true"))
        return _InvokedChat(lambda: self._streaming_chat(request, metadata=metadata, timeout=self._deadline))

    async def listing(self, caller: Caller) -> Listing:
        if self._list is None:
            raise LookupError("this facade was made without DirectoryService/List")
        request = directory_pb2.DirectoryRequest(public_directory=caller.public_directory)
        try:
            reply = await self._list(request, metadata=list(caller.metadata), timeout=self._lookup)
        except grpc.aio.AioRpcError as error:
            raise AgentsFailed(rpc_failure(error)) from None
        return Listing(reply.version, tuple(
            AgentSummary(entry.agent_name, entry.description, tuple(entry.tags), entry.mcp_tool or None,
                         _description(entry.agent_name, entry.function))
            for entry in reply.entries))

    async def describe(self, agent: str, caller: Caller) -> AgentDescription:
        if self._function is None:
            raise LookupError("this facade was made without AgentService/Function")
        metadata = [*caller_metadata(caller), ("agent-name", agent)]
        try:
            reply = await self._function(agent_pb2.FunctionRequest(), metadata=metadata, timeout=self._lookup)
        except grpc.aio.AioRpcError as error:
            raise AgentsFailed(rpc_failure(error)) from None
        return _description(agent, reply.function)
