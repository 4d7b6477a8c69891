"""Per-request state shared by every agent and tool of one chat turn."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from neuro_san.core.errors import LimitExceeded
from neuro_san.core.messages import ChatMessage, DeltaKind, MessageType, Origin, OriginPath
from neuro_san.core.telemetry import NO_TELEMETRY, Telemetry
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelFactory, TextDelta, Usage
from neuro_san.network.spec import NetworkSpec

if TYPE_CHECKING:  # the interface module refers back to RequestContext for its types only
    from neuro_san.reservations.store import ReservationStore
    from neuro_san.runtime.tool_interface import ToolBinder


class ClassResolver(Protocol):
    """Finds coded-tool classes (``coded_tools.CodedToolResolver``)."""

    def resolve(self, network: str, class_name: str) -> type: ...


#: Whose token deltas a request gets: nobody's, the front man's (MINIMAL), every agent's
#: (MAXIMAL).
TokenScope = Literal["none", "front", "all"]

#: Each agent's instructions and input as MAXIMAL journals them; nothing the client did not say.
_INPUT_ECHOES = frozenset({MessageType.SYSTEM, MessageType.HUMAN})


class JournalQueue(asyncio.Queue[Any]):
    """The journal's queue; it knows the last message put that nobody has taken yet, so a
    token delta can join the one still waiting (same agent, same kind) instead of queueing
    behind it. A client slower than the model then gets fewer, longer deltas carrying the
    same text, rather than a backlog of tiny ones each paying its own way through the
    transports; a client that keeps up gets every delta as it came."""

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.last_unread: Any = None

    def _put(self, item: Any) -> None:
        super()._put(item)
        self.last_unread = item

    def _get(self) -> Any:
        item = super()._get()
        if item is self.last_unread:
            self.last_unread = None
        return item


class Journal:
    """Where a request's messages go. Only MAXIMAL requests stream them: the others
    get no queue and every ``emit`` is a no-op, so MINIMAL pays nothing for them.
    A request that asked for ``stream_tokens`` gets a queue for its TOKEN_DELTA
    messages (``tokens``), whatever its filter."""

    __slots__ = ("agent_usage", "left_out", "queue", "streaming", "tokens")

    def __init__(
        self, streaming: bool, tokens: TokenScope = "none", echo_inputs: bool = True, agent_usage: bool = True
    ) -> None:
        #: Every message is journaled (MAXIMAL).
        self.streaming = streaming
        self.tokens: TokenScope = tokens
        #: The types never journaled: the input echoes, when the request asked for none
        #: (``ChatRequest.echo_inputs``), a called network's included.
        self.left_out = frozenset() if echo_inputs else _INPUT_ECHOES
        #: Token reports other than the request's total are journaled (``ChatRequest.agent_usage``).
        self.agent_usage = streaming and agent_usage
        wanted = streaming or tokens != "none"
        self.queue: JournalQueue | None = JournalQueue() if wanted else None

    def wants(self, type_: MessageType) -> bool:
        """Whether a message of ``type_`` would be journaled (so is worth building)."""
        return self.streaming and type_ not in self.left_out

    def emit(self, message: ChatMessage) -> None:
        if self.streaming and self.queue is not None and message.type not in self.left_out:
            self.queue.put_nowait(message)

    def delta_sink(self, origin: OriginPath) -> DeltaSink | None:
        """What an LLM call of the agent at ``origin`` tells its text to, or None when this
        request wants no deltas of that agent (the call is then not streamed at all)."""
        queue = self.queue
        if queue is None or self.tokens == "none" or (self.tokens == "front" and len(origin) > 1):
            return None

        def sink(delta: TextDelta) -> None:
            kind = DeltaKind.REASONING if delta.reasoning else DeltaKind.ANSWER
            waiting = queue.last_unread
            if (
                isinstance(waiting, ChatMessage)
                and waiting.type is MessageType.TOKEN_DELTA
                and waiting.delta_kind is kind
                and waiting.origin == origin
            ):
                waiting.text += delta.text
                return
            queue.put_nowait(ChatMessage(MessageType.TOKEN_DELTA, delta.text, origin, delta_kind=kind))

        return sink


@dataclass
class ModelUsage:
    usage: Usage = field(default_factory=Usage)
    requests: int = 0


@dataclass
class RequestContext:
    """Everything one request's agents share. Never shared between requests."""

    network: NetworkSpec
    sly_data: dict[str, Any]
    journal: Journal
    models: ModelFactory
    coded_tools: ClassResolver
    #: Makes each agent's tools (``tool_binding.AgentToolBinder``).
    tools: ToolBinder
    metadata: Mapping[str, str] = field(default_factory=dict)
    telemetry: Telemetry = NO_TELEMETRY
    started: float = field(default_factory=time.monotonic)
    _instances: Counter[str] = field(default_factory=Counter)
    usage_by_model: dict[str, ModelUsage] = field(default_factory=dict)
    #: Conversations a summarising middleware rewrote, by agent origin (chat_context).
    history_rewrites: dict[OriginPath, list[LlmMessage]] = field(default_factory=dict)
    #: Bring-your-own-key values (the request's sly_data.llm_config, taken out of
    #: sly_data; see neuro_san.llm.byok): for this request's LLM calls only.
    llm_keys: Mapping[str, Any] = field(default_factory=dict, repr=False)
    #: The server's temporary networks (NetworkCopyMiddleware); None where there are none.
    reservations: ReservationStore | None = None
    #: Tokens one request may spend (max_tokens_per_request); 0: no cap.
    max_tokens: int = 0
    #: Told each LLM call's tokens (per-caller budgets); may raise to stop the request.
    on_usage: Callable[[int], None] | None = None

    def instantiate(self, parent: OriginPath, tool: str) -> OriginPath:
        """The origin of a new instance of ``tool`` called from ``parent``; the index
        counts instances of that tool name within the request, from 1."""
        self._instances[tool] += 1
        return (*parent, Origin(tool, self._instances[tool]))

    def record_usage(self, model_key: str, usage: Usage) -> None:
        entry = self.usage_by_model.setdefault(model_key, ModelUsage())
        entry.usage = entry.usage + usage
        entry.requests += 1
        if self.on_usage is not None:
            self.on_usage(usage.total_tokens)
        if self.max_tokens:
            total = sum(e.usage.total_tokens for e in self.usage_by_model.values())
            if total > self.max_tokens:
                raise LimitExceeded(
                    f"this request used {total} LLM tokens, over its cap of {self.max_tokens} "
                    "(max_tokens_per_request); it was stopped"
                )

    def emit(
        self,
        type_: MessageType,
        origin: OriginPath,
        text: str = "",
        structure: dict[str, Any] | None = None,
        tool_result_origin: OriginPath = (),
    ) -> None:
        if self.journal.wants(type_):
            self.journal.emit(
                ChatMessage(
                    type=type_,
                    text=text,
                    origin=origin,
                    structure=structure,
                    tool_result_origin=tool_result_origin,
                )
            )
