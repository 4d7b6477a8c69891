"""The chat message model of the runtime, independent of protobuf and of any transport.

These mirror the wire messages of ``chat.proto``/``agent.proto`` one to one; the gRPC
service converts them (``neuro_san.wire.convert``). Keeping the runtime on plain
dataclasses lets it run in-process (external ``/name`` agents, tests) without paying
for protobuf, and keeps the core free of transport concerns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class MessageType(IntEnum):
    """``ChatMessage.ChatMessageType``; the numbers are the wire numbers."""

    UNKNOWN = 0
    SYSTEM = 1
    HUMAN = 2
    AI = 4
    AGENT = 100
    AGENT_FRAMEWORK = 101
    AGENT_TOOL_RESULT = 103
    AGENT_PROGRESS = 104
    #: A piece of an LLM agent's reply as it is written (``stream_tokens`` requests only).
    TOKEN_DELTA = 105


class DeltaKind(IntEnum):
    """``ChatMessage.DeltaKind``: what a TOKEN_DELTA's text is part of."""

    ANSWER = 0
    REASONING = 1


class ChatFilter(IntEnum):
    """``ChatFilterType``. UNKNOWN (or no filter at all) means MINIMAL."""

    UNKNOWN = 0
    MINIMAL = 1
    MAXIMAL = 2

    @property
    def is_maximal(self) -> bool:
        return self is ChatFilter.MAXIMAL


@dataclass(frozen=True, slots=True)
class Origin:
    """One step of a path from the front man down to a node.

    ``instantiation_index`` counts, from 1, how many times the tool named ``tool`` had
    been instantiated within the request when this instance was made.
    """

    tool: str
    instantiation_index: int = 1


OriginPath = tuple[Origin, ...]


def origin_str(path: OriginPath) -> str:
    """The dotted form of a path, as neuro-san prints it: ``front.sub-02``.

    The index is appended (two digits) only when it is above 1.
    """
    parts = []
    for step in path:
        if step.instantiation_index > 1:
            parts.append(f"{step.tool}-{step.instantiation_index:02d}")
        else:
            parts.append(step.tool)
    return ".".join(parts)


@dataclass(frozen=True, slots=True)
class MimeData:
    mime_type: str
    mime_bytes: bytes


@dataclass(slots=True)
class ChatMessage:
    """A message streamed to the client or kept in a history.

    ``structure`` and ``sly_data`` are plain JSON-like dicts; whole numbers stay ints.
    """

    type: MessageType
    text: str = ""
    origin: OriginPath = ()
    structure: dict[str, Any] | None = None
    chat_context: ChatContext | None = None
    tool_result_origin: OriginPath = ()
    sly_data: dict[str, Any] | None = None
    mime_data: tuple[MimeData, ...] = ()
    #: On TOKEN_DELTA messages: answer text or reasoning.
    delta_kind: DeltaKind = DeltaKind.ANSWER


@dataclass(slots=True)
class ChatHistory:
    """The history of one node (in practice the front man)."""

    origin: OriginPath
    messages: list[ChatMessage] = field(default_factory=list)


@dataclass(slots=True)
class ChatContext:
    """Everything needed to continue a conversation; the client carries it."""

    chat_histories: list[ChatHistory] = field(default_factory=list)


#: The origin of the one history of a chat_context whose history the client owns (see
#: ``ChatRequest.client_history``); a reserved name, never an agent's.
CLIENT_HISTORY_TOOL = "neuro-san.client-history"

#: Appended to an answer the model's output token limit cut off, so nobody takes it whole
#: (front-ends read it too: OpenAI's ``finish_reason: length``).
TRUNCATION_CAVEAT = "[Caveat: this answer was cut off at the model's output token limit (max_tokens).]"


@dataclass(slots=True)
class ChatRequest:
    """One turn of a conversation, as the runtime sees it.

    ``metadata`` holds the request metadata forwarded from the transport (the keys named
    in ``AGENT_FORWARDED_REQUEST_METADATA``), for logs and external agents. The request
    a MAXIMAL response echoes stays with the service, which alone echoes it.
    """

    user_text: str
    sly_data: dict[str, Any] = field(default_factory=dict)
    chat_context: ChatContext | None = None
    chat_filter: ChatFilter = ChatFilter.MINIMAL
    metadata: dict[str, str] = field(default_factory=dict)
    user_message: ChatMessage | None = None
    #: Called with the tokens of each LLM call as it completes; may raise to stop the
    #: chat (per-caller token budgets, set by the service).
    on_usage: Callable[[int], None] | None = None
    #: Whether to stream TOKEN_DELTA messages; None: the network's default.
    stream_tokens: bool | None = None
    #: The chat_context carries a history the client owns (OpenAI's ``messages``, AG-UI's),
    #: unsigned, under :data:`CLIENT_HISTORY_TOOL`: set by the service only for the server's
    #: own front-ends (``core/internal_metadata.CLIENT_HISTORY_KEY``), never from a client.
    client_history: bool = False
    #: A MAXIMAL stream echoes the inputs: each agent's instructions (SYSTEM) and user text
    #: (HUMAN), and the service echoes the request on every response. False leaves them
    #: out; set by the service only for the server's own front-ends, which drop them
    #: (``core/internal_metadata.LEAN_STREAM_KEY``).
    echo_inputs: bool = True
    #: A MAXIMAL stream reports each agent's token usage and the main network's, then the
    #: request's total. False leaves only the total (the front-ends read nothing else); set
    #: like ``echo_inputs``.
    agent_usage: bool = True


@dataclass(frozen=True, slots=True)
class ConnectivityEntry:
    """One node of a network for Connectivity."""

    origin: str
    tools: tuple[str, ...]
    display_as: str
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """One public network for Concierge List."""

    agent_name: str
    description: str
    tags: tuple[str, ...]
    #: False for networks served but not listed (manifest ``public: false``).
    public: bool = True
    #: Its MCP tool name when the manifest makes it an MCP tool, else None.
    mcp_tool: str | None = None
