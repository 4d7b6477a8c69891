"""The Anthropic messages wire protocol (``POST {base}/v1/messages``).

Differences from chat completions that this module absorbs:

- The system prompt is a top-level ``system`` field, not a message.
- Roles must alternate user/assistant. Tool results travel as ``tool_result`` blocks in
  a *user* message, so consecutive tool results (one per parallel call) are merged into
  one user message, and any other run of same-role messages is merged the same way.
- Assistant tool calls are ``tool_use`` blocks whose ``input`` is already an object.
- ``max_tokens`` is required.
- With ``thinking`` enabled (llm_config ``thinking``, passed through), replies carry
  ``thinking`` / ``redacted_thinking`` blocks with signatures; Anthropic requires them
  back, unmodified and first, in the assistant turn that made tool calls. They are kept
  as the turn's reasoning state and never become answer text.
- On Bedrock (InvokeModel, ``anthropic-bedrock``), the body names no ``model`` (it is in
  the URL) and carries ``anthropic_version: bedrock-2023-05-31``.

HTTP, retries and errors are :class:`~neuro_san.llm.http.HttpPool`'s; the endpoint
(URL, ``x-api-key``, ``anthropic-version``) comes from :mod:`neuro_san.llm.config`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from neuro_san.llm.adapters.http_model import HttpJsonModel, ModelSettings, renamed_action
from neuro_san.llm.adapters.reply_parts import ObjectArgumentsCall, token_count
from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.http import Endpoint, HttpPool, ReplyReader
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelResponse, ToolCall, ToolSpec, Usage
from neuro_san.llm.streams.anthropic import AnthropicStream, BedrockAnthropicStream
from neuro_san.llm.streams.framing import EventStreamDecoder, SseDecoder, stream_reader
from neuro_san.llm.turns import alternating_turns

#: The API version header value this adapter speaks.
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
#: The API version InvokeModel on Bedrock takes in the body.
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
#: Anthropic rejects empty text blocks; an empty user turn is sent as this.
EMPTY_TEXT = "(empty)"
#: The tag of reasoning state kept from a messages reply.
REASONING_KIND = "anthropic"
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
_TOOL_USE = ObjectArgumentsCall(
    id_key="id",
    arguments_key="input",
    id_prefix="toolu_",
    where="tool_use block {index}",
    complaint="tool input must be a JSON object",
)


class AnthropicModel(HttpJsonModel):
    """A :class:`~neuro_san.llm.interface.Model` over Anthropic messages (streamed when
    asked for deltas: :mod:`neuro_san.llm.streams.anthropic`; on Bedrock through
    ``invoke-with-response-stream``)."""

    def __init__(
        self,
        pool: HttpPool,
        endpoint: Endpoint,
        model_name: str,
        *,
        thinking: Mapping[str, Any] | None = None,
        bedrock: bool = False,
        **settings: Unpack[ModelSettings],
    ) -> None:
        super().__init__(pool, endpoint, model_name, **settings)
        self._max_tokens = self._max_tokens or DEFAULT_MAX_TOKENS
        self._thinking = dict(thinking) if thinking else None
        self._bedrock = bedrock

    def request_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The JSON body for one call."""
        system, converted = to_anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": self._model_name,
            "max_tokens": self._max_tokens,
            "messages": converted,
        }
        if self._bedrock:
            del body["model"]
            body["anthropic_version"] = BEDROCK_ANTHROPIC_VERSION
        if self._thinking:
            body["thinking"] = self._thinking
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": dict(tool.parameters),
                }
                for tool in tools
            ]
        if self._temperature is not None:
            body["temperature"] = self._temperature
        return body

    def parse_reply(self, reply: Mapping[str, Any]) -> ModelResponse:
        return parse_anthropic_reply(reply, self._endpoint.provider, self._model_name)

    def stream_endpoint(self) -> Endpoint:
        if self._bedrock:
            return renamed_action(self._endpoint, "/invoke", "/invoke-with-response-stream")
        return self._endpoint

    def stream_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        # On Bedrock the method streams; the body takes no "stream" field.
        return self.request_body(messages, tools) if self._bedrock else super().stream_body(messages, tools)

    def stream_reader(self, on_delta: DeltaSink) -> ReplyReader:
        if self._bedrock:
            return stream_reader(EventStreamDecoder(), BedrockAnthropicStream(on_delta, self.provider), self.provider)
        return stream_reader(SseDecoder(), AnthropicStream(on_delta, self.provider), self.provider)


def to_anthropic_messages(
    messages: Sequence[LlmMessage],
) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for a conversation, with roles strictly alternating."""
    return alternating_turns(messages, _blocks, assistant_role="assistant", items_key="content")


def _blocks(message: LlmMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content or EMPTY_TEXT,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.role == "assistant":
        # Thinking blocks first, exactly as received (their signatures cover them).
        blocks.extend(
            dict(state["block"])
            for state in message.reasoning
            if state.get("kind") == REASONING_KIND and isinstance(state.get("block"), Mapping)
        )
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
            for call in message.tool_calls
        )
    elif not blocks:
        blocks.append({"type": "text", "text": EMPTY_TEXT})
    return blocks


def parse_anthropic_reply(reply: Mapping[str, Any], provider: str, model_name: str) -> ModelResponse:
    """The assistant turn in a messages reply, or LlmMalformedReply."""
    content = reply.get("content")
    if not isinstance(content, list):
        raise LlmMalformedReply("reply has no content list", provider)
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise LlmMalformedReply(f"content block {index} is not an object", provider)
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(_TOOL_USE.read(index, block, provider))
        elif kind in _THINKING_BLOCKS:
            reasoning.append({"kind": REASONING_KIND, "block": dict(block)})
        # Other block kinds (server tools) carry nothing the runtime uses.
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=_usage(reply.get("usage")),
        model=str(reply.get("model") or model_name),
        reasoning=tuple(reasoning),
        truncated=reply.get("stop_reason") == "max_tokens",
    )


def _usage(usage: Any) -> Usage:
    # Cached input is still input the request consumed.
    prompt = sum(
        token_count(usage, key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(prompt, token_count(usage, "output_tokens"))
