"""The facade's types: one user turn in, typed events out (:class:`Agents`).

Every event is a frozen dataclass. A chat yields, in order: any number of
:class:`AnswerDelta` (the front man's answer as it is written, with ``stream_tokens``) and
:class:`Step` (what the network does, with the MAXIMAL filter), then either one
:class:`Answer` or one :class:`ChatFailed`. A consumer that stops early closes the stream
(``aclose``, ``async with``) or has its task cancelled: either cancels the chat, and so its
LLM calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway.host.errors import RpcFailure
from neuro_san.core.errors import Code

#: The caller's gRPC metadata, as ``FrontEndContext.metadata`` builds it (credentials,
#: request id, the client's address, the keys only front-ends set).
CallerMetadata = Sequence[tuple[str, str | bytes]]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks, and under which of the service's rules.

    ``metadata`` is the request's, as ``FrontEndContext.metadata`` builds it. The rules are
    explicit fields; how they reach the service is the facade's business, not the
    front-end's.
    """

    metadata: CallerMetadata
    #: A private network (``public: false``) is absent unless the caller's key or token
    #: names it: the rule of every protocol front-end (MCP, A2A, OpenAI, AG-UI). False is
    #: REST's and gRPC's rule (unlisted but callable by name, as in neuro-san).
    private_named_only: bool = True
    #: Answer from the public directory (public networks only) to a caller without
    #: credentials, even with API keys on: A2A cards, which say how to authenticate.
    public_directory: bool = False


class InvalidTurn(ValueError):
    """A turn the API cannot carry; the message names the field, never echoes values
    (sly_data may hold secrets). ``field``: the turn's field at fault, when known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class HistoryMessage:
    """One earlier message of a conversation whose history the client owns (OpenAI's
    ``messages``, AG-UI's): given to the front man as its history."""

    #: ``"user"`` or ``"assistant"``.
    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn. The mappings are the JSON forms of neuro-san's API (as REST takes
    them); :meth:`of_text` is the common case, a human's text."""

    #: A ChatMessage, e.g. ``{"text": "hi"}``.
    user_message: Mapping[str, Any]
    chat_context: Mapping[str, Any] | None = None
    sly_data: Mapping[str, Any] | None = None
    #: ``"MINIMAL"`` (the answer only), ``"MAXIMAL"`` (every step too) or ``"UNKNOWN"``
    #: (treated as MINIMAL); None leaves it unset.
    chat_filter: str | None = None
    #: Ask for the front man's answer as it is written (:class:`AnswerDelta`).
    stream_tokens: bool = False
    #: Refuse unknown fields and enum names in chat_context (A2A's rule) instead of
    #: ignoring them (REST's and MCP's, as grpc-gateway does).
    strict_context: bool = False
    #: The conversation so far, when the client owns it (instead of ``chat_context``; a
    #: turn carries one or the other): the front man's history, oldest first. The service
    #: restores it as it restores a chat_context (HUMAN/AI only, bounded) but without a
    #: signature: on the facade's word, which only the server's own front-ends can give.
    history: tuple[HistoryMessage, ...] = ()
    #: With MAXIMAL, each agent's token report is a :class:`Step` (MCP's progress counts
    #: them). False: only the request's total, on the :class:`Answer` (``usage``).
    agent_usage: bool = True

    @classmethod
    def of_text(
        cls, text: str, *, chat_context: Mapping[str, Any] | None = None, sly_data: Mapping[str, Any] | None = None,
        steps: bool = False, stream_tokens: bool = False, strict_context: bool = False,
    ) -> Turn:
        """A human's ``text``; ``steps``: the MAXIMAL filter, else MINIMAL."""
        return cls({"type": "HUMAN", "text": text}, chat_context, sly_data,
                   "MAXIMAL" if steps else "MINIMAL", stream_tokens, strict_context)


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    """A piece of the front man's answer (reasoning and other agents' pieces are left out:
    their complete messages are steps)."""

    text: str


class StepKind(StrEnum):
    """What a :class:`Step` is (the names of neuro-san's message types)."""

    #: An LLM agent's own message.
    AI = "AI"
    #: The framework's note of an agent's work: a tool being invoked, its usage report…
    AGENT = "AGENT"
    #: The result a caller gets back from a tool.
    TOOL_RESULT = "AGENT_TOOL_RESULT"
    #: A coded tool's progress report.
    PROGRESS = "AGENT_PROGRESS"


@dataclass(frozen=True, slots=True)
class Step:
    """One thing the network did (MAXIMAL): an agent's message, a tool's arguments or result."""

    #: A :class:`StepKind` (its value is the message type's name).
    kind: str
    #: The agents (tools) from the front man down to the one that speaks.
    origin: tuple[str, ...]
    text: str
    structure: Mapping[str, Any] | None = None
    #: A tool call's arguments ("Received arguments:"), else None.
    arguments: Any = None
    #: A tool call's result ("Got result:"), else None.
    result: Any = None
    #: On ``AGENT_TOOL_RESULT`` (the result a caller gets back from a tool): the origin of
    #: the tool that produced it, so a front-end pairs it with its call; else ().
    result_of: tuple[str, ...] = ()

    @property
    def agent(self) -> str:
        """The agent (or tool) that speaks: the last of the origin."""
        return self.origin[-1] if self.origin else ""

    @property
    def invoking(self) -> tuple[str, Any] | None:
        """(the tool called, its arguments) when this is an agent calling a tool (neuro-san's
        "Invoking …" message), else None."""
        structure = self.structure if isinstance(self.structure, Mapping) else {}
        if self.kind != StepKind.AGENT or not structure.get("invoking_start"):
            return None
        return str(structure.get("invoked_agent_name") or "tool"), structure.get("params")

    @property
    def usage(self) -> Mapping[str, Any] | None:
        """The token accounting of an agent's work (neuro-san's usage report), else None."""
        structure = self.structure if isinstance(self.structure, Mapping) else {}
        return structure if self.kind == StepKind.AGENT and "total_tokens" in structure else None

    @property
    def is_keepalive(self) -> bool:
        """The service's keep-alive on a quiet stream (an empty progress report): no news."""
        return self.kind == StepKind.PROGRESS and not self.text and not self.structure


@dataclass(frozen=True, slots=True)
class Answer:
    """The chat's answer: its text, structure, the chat_context to continue from and the
    sly_data the network lets back.

    ``chat_context`` and ``usage`` may be read-only Mappings converted when read
    (``gateway/agents/deferred.py``; a token report's Step ``structure`` too): ``dict()``
    one to keep it or to serialize it."""

    text: str
    structure: Mapping[str, Any] | None = None
    #: None when the answer carries none.
    chat_context: Mapping[str, Any] | None = None
    sly_data: Mapping[str, Any] = field(default_factory=dict)
    #: The request's token total (``runtime/usage_report.py``'s report: ``total_tokens``,
    #: ``prompt_tokens``, ``completion_tokens``, ``models``…), when the chat ran with the
    #: MAXIMAL filter (the service reports usage only there); else None.
    usage: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ChatFailed:
    """The call failed or was refused: the service's error, as every HTTP-side front-end
    reads it (code, ErrorInfo reason, message, ``retry-after``). The last event."""

    failure: RpcFailure

    @property
    def code(self) -> Code:
        return Code(self.failure.code)

    @property
    def reason(self) -> str | None:
        return self.failure.reason

    @property
    def message(self) -> str:
        return self.failure.message

    @property
    def retry_after(self) -> str | None:
        return self.failure.retry_after

    @property
    def is_refusal(self) -> bool:
        """Refused for a while (caller limits, server busy or draining), not failed by the network."""
        return self.failure.is_refusal


ChatEvent = AnswerDelta | Step | Answer | ChatFailed


@dataclass(frozen=True, slots=True)
class AgentDescription:
    """What one network says of itself: its front man's function (``AgentService/Function``)."""

    name: str
    #: The front man's function description.
    description: str
    #: JSON Schema of the front man's ``function.parameters``, when it declares them.
    parameters: Mapping[str, Any] | None = None
    #: JSON Schema of the sly_data it takes, when it declares one.
    sly_data_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """One network the caller may see, as a directory lists it."""

    name: str
    #: The manifest's (or the network's metadata) description, as Concierge lists it.
    description: str
    tags: tuple[str, ...] = ()
    #: Its MCP tool name when the manifest makes it an MCP tool, else None.
    mcp_tool: str | None = None
    #: What it says of itself (as :meth:`Agents.describe` answers), listed with it.
    function: AgentDescription | None = None


@dataclass(frozen=True, slots=True)
class Listing:
    """The networks a caller may see, and the directory's version of that answer (equal
    versions: equal listings), for a front-end that keeps it a while."""

    version: str
    agents: tuple[AgentSummary, ...]


class AgentsFailed(Exception):
    """A directory call (:meth:`Agents.list`, :meth:`Agents.describe`) failed or was refused:
    the service's error, read as :class:`ChatFailed` reads it."""

    def __init__(self, failure: RpcFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure

    @property
    def code(self) -> Code:
        return Code(self.failure.code)


class ChatStream(AsyncIterator[ChatEvent]):
    """The events of one chat; an async context manager that closes (cancels) it on exit."""

    async def aclose(self) -> None:
        """Cancel the chat if it still runs; iteration ends."""
        raise NotImplementedError

    async def __aenter__(self) -> ChatStream:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


class Agents:
    """What front-ends call agents through."""

    def chat(self, agent: str, turn: Turn, caller: Caller) -> ChatStream:
        """The events of one turn with ``agent``; raises :class:`InvalidTurn` at once (before
        any call) when ``turn`` does not fit the API. The call starts on the first read."""
        raise NotImplementedError

    async def listing(self, caller: Caller) -> Listing:
        """The networks ``caller`` may see, with their functions and MCP tool names, in one
        service call; raises :class:`AgentsFailed`. A private network is listed only when
        the caller's key or token names it, whatever ``caller.private_named_only`` says (no
        rule lists a network the key does not name); ``caller.public_directory`` lists the
        public networks to a caller without credentials."""
        raise NotImplementedError

    async def list(self, caller: Caller) -> list[AgentSummary]:
        """:meth:`listing`'s networks."""
        return list((await self.listing(caller)).agents)

    async def describe(self, agent: str, caller: Caller) -> AgentDescription:
        """What ``agent`` says of itself; raises :class:`AgentsFailed` (NOT_FOUND for a
        network the caller may not see, PERMISSION_DENIED…)."""
        raise NotImplementedError
