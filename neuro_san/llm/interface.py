"""The boundary between the agent runtime and any LLM.

The runtime hands a model the conversation so far and the tools it may call; the model
answers with one assistant turn: text, tool calls, or both, plus token usage. That is
all the runtime needs, so every provider (OpenAI-compatible chat completions, Anthropic
messages, the offline scripted model) implements just :class:`Model`.

Rules every implementation follows:

- ``complete`` is a coroutine and never blocks the event loop.
- Cancelling the task that awaits ``complete`` abandons the call at once (an HTTP
  adapter closes its connection), so a client's disconnect stops the spend.
- Failures raise :class:`LlmError` subclasses (``neuro_san.llm.errors``), which carry
  a gRPC-style code; nothing else escapes, and no message contains sly_data (it is
  never given to a model in the first place).
- ``complete(..., on_delta=sink)`` streams: the model asks its provider for a streamed
  reply and tells ``sink`` each piece of text as it arrives (answer text, and reasoning
  marked apart). The :class:`ModelResponse` it returns is the one it would have returned
  without streaming (tool calls assembled from their pieces, usage, truncation), and the
  answer deltas, concatenated, equal its ``text``. Without a sink nothing changes: the
  provider call is today's, not streamed.
- Tool arguments come back parsed (``ToolCall.arguments``); a reply whose arguments are
  not a JSON object keeps the raw text in ``raw_arguments`` and sets ``arguments_error``
  so the runtime can tell the model what went wrong instead of failing the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call. ``parameters`` is a valid JSON Schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    raw_arguments: str = ""
    #: Why ``raw_arguments`` could not be used, when it could not.
    arguments_error: str | None = None


@dataclass(frozen=True, slots=True)
class LlmMessage:
    """One entry of the conversation sent to a model.

    - ``system``: instructions; ``user``: input; ``assistant``: an earlier model turn
      (with its ``tool_calls``); ``tool``: the result for ``tool_call_id``.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    #: An assistant turn's opaque reasoning state, exactly as its provider sent it
    #: (:attr:`ModelResponse.reasoning`): sent back to the provider that requires it,
    #: never shown to the client as answer text.
    reasoning: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One assistant turn."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    #: The model that answered, as the provider names it.
    model: str = ""
    #: The provider's opaque reasoning state for this turn (DeepSeek ``reasoning_content``,
    #: Anthropic ``thinking``/``redacted_thinking`` blocks, Gemini parts with a
    #: ``thoughtSignature``, Bedrock ``reasoningContent``), each item tagged by the adapter
    #: that made it. The runtime keeps it on the assistant :class:`LlmMessage`.
    reasoning: tuple[Mapping[str, Any], ...] = ()
    #: The reply was cut off by the output token limit (``finish_reason: length``,
    #: ``stop_reason: max_tokens``, ``finishReason: MAX_TOKENS``).
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of a reply as the provider streamed it."""

    text: str
    #: Reasoning ("thinking") rather than answer text.
    reasoning: bool = False


#: Told each :class:`TextDelta` of a streamed reply, in order. Called on the event loop:
#: it must not block (the runtime only queues the piece for the client).
DeltaSink = Callable[[TextDelta], None]


@runtime_checkable
class Model(Protocol):
    """An LLM the runtime can call. Instances are shared by concurrent requests."""

    @property
    def provider(self) -> str:
        """Short provider name for accounting and metrics: ``openai``, ``anthropic``…"""
        ...

    @property
    def model_name(self) -> str:
        """The model's name for accounting."""
        ...

    async def complete(
        self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec], on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        """Return the model's next turn for ``messages`` given ``tools``; with
        ``on_delta``, stream it (see the module docstring)."""
        ...


class ModelFactory(Protocol):
    """Turns an agent's resolved ``llm_config`` into a (shared, cached) :class:`Model`.

    Raises ``neuro_san.core.errors.ConfigurationError`` for a config that names no
    known provider or lacks what it needs (for example an API key).
    """

    def create(self, llm_config: Mapping[str, Any], llm_keys: Mapping[str, Any] | None = None) -> Model:
        """``llm_keys`` is the request's ``sly_data.llm_config``: llm_config values written
        ``"sly_data"`` (bring-your-own-key) are taken from it, for this request only."""
        ...

    async def aclose(self) -> None:
        """Release shared resources (HTTP sessions)."""
        ...
