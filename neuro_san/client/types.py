"""Typed results of the client calls, and the one place requests are built.

Chat messages are :mod:`neuro_san.core.messages` dataclasses, converted by
:mod:`neuro_san.wire.convert`, as the server's are (both transports end in a protobuf
message, so there is a single conversion path). Protobuf is imported lazily, in the
functions that convert: building a client, or parsing arguments, does not pay for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuro_san.core.messages import (
    AgentInfo,
    ChatContext,
    ChatFilter,
    ChatMessage,
    ChatRequest,
    ConnectivityEntry,
    MessageType,
)

if TYPE_CHECKING:
    from neuro_san.api.grpc import agent_pb2, concierge_pb2

MINIMAL = ChatFilter.MINIMAL
MAXIMAL = ChatFilter.MAXIMAL


@dataclass(frozen=True, slots=True)
class FunctionInfo:
    """An agent network's front man's ``function``: what it does, what it takes."""

    description: str = ""
    parameters: dict[str, Any] | None = None
    sly_data_schema: dict[str, Any] | None = None
    sly_data_output_schema: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``function`` dict as the network file writes it (absent keys left out)."""
        out: dict[str, Any] = {"description": self.description} if self.description else {}
        for key in ("parameters", "sly_data_schema", "sly_data_output_schema"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class Connectivity:
    """The nodes of a network; the first entry is the front man."""

    entries: list[ConnectivityEntry] = field(default_factory=list)
    metadata: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "connectivity_info": [
                {
                    "origin": e.origin,
                    "tools": list(e.tools),
                    "display_as": e.display_as,
                    **({"metadata": dict(e.metadata)} if e.metadata else {}),
                }
                for e in self.entries
            ]
        }
        if self.metadata:
            out["metadata"] = self.metadata
        return out


def agents_from_proto(pb: concierge_pb2.ConciergeResponse) -> list[AgentInfo]:
    return [AgentInfo(a.agent_name, a.description, tuple(a.tags)) for a in pb.agents]


def function_from_proto(pb: agent_pb2.FunctionResponse) -> FunctionInfo:
    from neuro_san.wire.convert import struct_to_dict  # lazy: protobuf (see the module's docstring)

    function = pb.function

    def optional(name: str) -> dict[str, Any] | None:
        return struct_to_dict(getattr(function, name)) if function.HasField(name) else None

    return FunctionInfo(
        description=function.description,
        parameters=optional("parameters"),
        sly_data_schema=optional("sly_data_schema"),
        sly_data_output_schema=optional("sly_data_output_schema"),
    )


def connectivity_from_proto(pb: agent_pb2.ConnectivityResponse) -> Connectivity:
    from neuro_san.wire.convert import struct_to_dict  # lazy: protobuf (see the module's docstring)

    entries = [
        ConnectivityEntry(
            origin=info.origin,
            tools=tuple(info.tools),
            display_as=info.display_as,
            metadata=struct_to_dict(info.metadata) if info.HasField("metadata") else None,
        )
        for info in pb.connectivity_info
    ]
    return Connectivity(entries, struct_to_dict(pb.metadata) if pb.HasField("metadata") else None)


def message_from_response(pb: agent_pb2.ChatResponse) -> ChatMessage | None:
    """The message of one streamed response; ``None`` for the empty response."""
    from neuro_san.wire.convert import message_from_proto  # lazy: protobuf (see the module's docstring)

    if not pb.HasField("response"):
        return None
    return message_from_proto(pb.response)


def build_request(
    text: str,
    sly_data: dict[str, Any] | None = None,
    chat_filter: ChatFilter = ChatFilter.MINIMAL,
    chat_context: ChatContext | None = None,
    stream_tokens: bool | None = None,
) -> ChatRequest:
    return ChatRequest(
        user_text=text,
        sly_data=dict(sly_data or {}),
        chat_context=chat_context,
        chat_filter=chat_filter,
        stream_tokens=stream_tokens,
    )


def request_to_proto(request: ChatRequest) -> agent_pb2.ChatRequest:
    """The wire form of a request; the user message is a HUMAN message with its text."""
    # Lazy: protobuf (see the module's docstring).
    from neuro_san.api.grpc import agent_pb2
    from neuro_san.wire.convert import context_to_proto, fill_struct, message_to_proto

    pb = agent_pb2.ChatRequest()
    user = request.user_message or ChatMessage(MessageType.HUMAN, request.user_text)
    if user.text or request.user_text:
        message_to_proto(user, pb.user_message)
        if not pb.user_message.text:
            pb.user_message.text = request.user_text
    if request.sly_data:
        fill_struct(pb.sly_data, request.sly_data)
    if request.chat_context is not None:
        context_to_proto(request.chat_context, pb.chat_context)
    if request.chat_filter is not ChatFilter.UNKNOWN:
        pb.chat_filter.chat_filter_type = int(request.chat_filter)  # type: ignore[assignment]
    if request.stream_tokens is not None:
        pb.stream_tokens = request.stream_tokens
    return pb
