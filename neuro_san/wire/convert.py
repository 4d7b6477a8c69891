"""Conversion between the wire messages (protobuf) and the runtime's dataclasses.

Struct numbers are doubles on the wire; whole ones come back to Python as ``int`` so
coded tools see ``10``, not ``10.0``. Values that JSON cannot hold (objects a coded
tool left in sly_data) are turned into strings rather than failing the response.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import struct_pb2

from neuro_san.api.grpc import agent_pb2, chat_pb2, concierge_pb2
from neuro_san.core.errors import InvalidRequest
from neuro_san.core.messages import (
    AgentInfo,
    ChatContext,
    ChatFilter,
    ChatHistory,
    ChatMessage,
    ChatRequest,
    ConnectivityEntry,
    DeltaKind,
    MessageType,
    Origin,
    OriginPath,
)

_MESSAGE_TYPES = {int(t): t for t in MessageType}

#: The most histories plus messages an incoming chat_context may hold, counted before it
#: is converted: converting is pure Python on the event loop, so a 16 MiB context of
#: tiny histories would otherwise stall every other call for seconds. The runtime's own,
#: tighter bounds (runtime/history.py) apply to the front man's messages afterwards.
MAX_CONTEXT_ENTRIES = 8_000


def value_to_python(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        if number.is_integer() and math.isfinite(number) and abs(number) < 2**63:
            return int(number)
        return number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [value_to_python(v) for v in value.list_value.values]
    return None


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    return {key: value_to_python(v) for key, v in struct.fields.items()}


def fill_struct(target: struct_pb2.Struct, data: Mapping[str, Any]) -> None:
    try:
        _fill(target, data)
    except (ValueError, TypeError):
        target.Clear()
        target.update(json.loads(json.dumps(data, default=str)))


# ``Struct.update`` sets each value through Python-level isinstance checks; a usage report
# (two per MAXIMAL chat, ~25 values each) took ~25 µs that way. The plain JSON types are set
# here directly, and anything else (None, subclasses, protobuf's own Struct values) goes
# through protobuf's public ``update``/``append``, so the rules stay protobuf's.
def _fill(struct: struct_pb2.Struct, data: Mapping[str, Any]) -> None:
    fields = struct.fields
    for key, value in data.items():
        if not _set(fields[key], value):
            struct.update({key: value})


def _extend(target: struct_pb2.ListValue, items: list[Any]) -> None:
    values = target.values
    for item in items:
        if not _set(values.add(), item):
            del values[-1]
            target.append(item)


def _set(target: struct_pb2.Value, value: Any) -> bool:
    """Set ``value`` if it is exactly str, int, float, bool, dict or list; False otherwise."""
    kind = type(value)
    if kind is str:
        target.string_value = value
    elif kind is int or kind is float:
        target.number_value = value
    elif kind is bool:
        target.bool_value = value
    elif kind is dict:
        struct = target.struct_value
        struct.Clear()  # marks it set: an empty dict is an empty Struct, not a missing value
        _fill(struct, value)
    elif kind is list:
        values = target.list_value
        values.Clear()
        _extend(values, value)
    else:
        return False
    return True


def origins_to_proto(path: OriginPath) -> list[chat_pb2.Origin]:
    return [chat_pb2.Origin(tool=o.tool, instantiation_index=o.instantiation_index) for o in path]


def add_origins(target: Any, path: OriginPath) -> None:
    """Append ``path`` to a repeated Origin field in place: ``extend`` with new messages
    would build each one and then copy it in (~1 µs more per origin, several per response)."""
    add = target.add
    for o in path:
        add(tool=o.tool, instantiation_index=o.instantiation_index)


def origins_from_proto(origins: Any) -> OriginPath:
    return tuple(Origin(o.tool, o.instantiation_index) for o in origins)


def context_to_proto(context: ChatContext, target: chat_pb2.ChatContext) -> None:
    for history in context.chat_histories:
        pb_history = target.chat_histories.add()
        add_origins(pb_history.origin, history.origin)
        for message in history.messages:
            message_to_proto(message, pb_history.messages.add())


def context_from_proto(context: chat_pb2.ChatContext) -> ChatContext:
    return ChatContext(
        chat_histories=[
            ChatHistory(
                origin=origins_from_proto(h.origin),
                messages=[message_from_proto(m) for m in h.messages],
            )
            for h in context.chat_histories
        ]
    )


def message_to_proto(message: ChatMessage, target: chat_pb2.ChatMessage | None = None) -> chat_pb2.ChatMessage:
    pb = chat_pb2.ChatMessage() if target is None else target
    pb.type = int(message.type)  # type: ignore[assignment]
    if message.text:
        pb.text = message.text
    if message.origin:
        add_origins(pb.origin, message.origin)
    if message.structure is not None:
        fill_struct(pb.structure, message.structure)
    if message.chat_context is not None:
        context_to_proto(message.chat_context, pb.chat_context)
    if message.tool_result_origin:
        add_origins(pb.tool_result_origin, message.tool_result_origin)
    if message.sly_data:
        fill_struct(pb.sly_data, message.sly_data)
    for mime in message.mime_data:
        pb.mime_data.add(mime_type=mime.mime_type, mime_bytes=mime.mime_bytes)
    if message.delta_kind:
        pb.delta_kind = int(message.delta_kind)  # type: ignore[assignment]
    return pb


def message_from_proto(pb: chat_pb2.ChatMessage) -> ChatMessage:
    return ChatMessage(
        type=_MESSAGE_TYPES.get(pb.type, MessageType.UNKNOWN),
        text=pb.text,
        origin=origins_from_proto(pb.origin),
        structure=struct_to_dict(pb.structure) if pb.HasField("structure") else None,
        chat_context=context_from_proto(pb.chat_context) if pb.HasField("chat_context") else None,
        tool_result_origin=origins_from_proto(pb.tool_result_origin),
        sly_data=struct_to_dict(pb.sly_data) if pb.HasField("sly_data") else None,
        delta_kind=DeltaKind.REASONING if pb.delta_kind == chat_pb2.ChatMessage.REASONING else DeltaKind.ANSWER,
    )


def _bounded_context(context: chat_pb2.ChatContext) -> ChatContext:
    histories = context.chat_histories
    entries = len(histories) + sum(len(history.messages) for history in histories)
    if entries > MAX_CONTEXT_ENTRIES:
        raise InvalidRequest(
            f"chat_context holds {entries} histories and messages; at most {MAX_CONTEXT_ENTRIES} are accepted",
            field="chat_context",
        )
    return context_from_proto(context)


def request_from_proto(pb: agent_pb2.ChatRequest, metadata: dict[str, str]) -> ChatRequest:
    maximal = pb.chat_filter.chat_filter_type == agent_pb2.MAXIMAL
    return ChatRequest(
        user_text=pb.user_message.text,
        sly_data=struct_to_dict(pb.sly_data) if pb.HasField("sly_data") else {},
        chat_context=_bounded_context(pb.chat_context) if pb.HasField("chat_context") else None,
        chat_filter=ChatFilter.MAXIMAL if maximal else ChatFilter.MINIMAL,
        metadata=metadata,
        stream_tokens=pb.stream_tokens if pb.HasField("stream_tokens") else None,
    )


def function_to_proto(function: Mapping[str, Any]) -> agent_pb2.FunctionResponse:
    """The front man's ``function`` dict; keys the proto does not know are dropped."""
    pb = agent_pb2.FunctionResponse()
    out = pb.function
    description = function.get("description")
    if isinstance(description, str):
        out.description = description
    for key in ("parameters", "sly_data_schema", "sly_data_output_schema"):
        value = function.get(key)
        if isinstance(value, Mapping):
            fill_struct(getattr(out, key), value)
    return pb


def connectivity_to_proto(
    entries: list[ConnectivityEntry], metadata: Mapping[str, Any] | None
) -> agent_pb2.ConnectivityResponse:
    pb = agent_pb2.ConnectivityResponse()
    for entry in entries:
        info = pb.connectivity_info.add(origin=entry.origin, display_as=entry.display_as)
        info.tools.extend(entry.tools)
        if entry.metadata:
            fill_struct(info.metadata, entry.metadata)
    if metadata:
        fill_struct(pb.metadata, metadata)
    return pb


def agents_to_proto(agents: list[AgentInfo]) -> concierge_pb2.ConciergeResponse:
    pb = concierge_pb2.ConciergeResponse()
    for agent in agents:
        pb.agents.add(agent_name=agent.agent_name, description=agent.description, tags=list(agent.tags))
    return pb
