"""The OpenAI chat-completions wire protocol (``POST {base}/chat/completions``).

One adapter serves every endpoint that speaks this protocol: OpenAI itself, Azure
OpenAI, Ollama, vLLM, llama.cpp, LM Studio… Which one, and how to authenticate, is the
provider layer's business (:mod:`neuro_san.llm.config` builds the
:class:`~neuro_san.llm.http.Endpoint`); this module only converts messages to the wire
format and replies back, and leaves HTTP to :class:`~neuro_san.llm.http.HttpPool`.

The converters are pure module functions so they can be tested without a server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from neuro_san.llm.adapters.http_model import HttpJsonModel, ModelSettings
from neuro_san.llm.adapters.reply_parts import new_tool_call_id, token_count
from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.http import Endpoint, HttpPool, ReplyReader
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelResponse, ToolCall, ToolSpec, Usage
from neuro_san.llm.streams.framing import SseDecoder, stream_reader
from neuro_san.llm.streams.openai import OpenAIStream


class OpenAIChatModel(HttpJsonModel):
    """A :class:`~neuro_san.llm.interface.Model` over chat completions (streamed when
    asked for deltas: :mod:`neuro_san.llm.streams.openai`).

    Instances are immutable and shared by concurrent requests.
    """

    def __init__(
        self,
        pool: HttpPool,
        endpoint: Endpoint,
        model_name: str,
        *,
        reasoning: bool | None = None,
        instruction_role: str | None = None,
        **settings: Unpack[ModelSettings],
    ) -> None:
        """``reasoning`` (default: guessed from the name, see :func:`is_reasoning_model`)
        marks OpenAI reasoning models, which take ``max_completion_tokens`` instead of
        ``max_tokens`` and reject a non-default ``temperature`` (so it is not sent).
        ``instruction_role`` is the role instructions travel in (default ``system``; see
        :func:`openai_instruction_role`). ``extra_fields`` are merged into every request
        body (provider-specific fields such as Ollama's ``reasoning_effort``)."""
        super().__init__(pool, endpoint, model_name, **settings)
        self._reasoning = is_reasoning_model(model_name) if reasoning is None else reasoning
        if self._reasoning:
            self._temperature = None
        self._instruction_role = instruction_role or "system"

    def request_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The JSON body for one call."""
        body: dict[str, Any] = {
            **self._extra_fields,
            "model": self._model_name,
            "messages": to_openai_messages(messages, self._instruction_role),
            "stream": False,
        }
        if tools:
            body["tools"] = [to_openai_tool(tool) for tool in tools]
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if self._max_tokens is not None:
            body["max_completion_tokens" if self._reasoning else "max_tokens"] = self._max_tokens
        return body

    def parse_reply(self, reply: Mapping[str, Any]) -> ModelResponse:
        return parse_openai_reply(reply, self._endpoint.provider, self._model_name)

    def stream_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        # include_usage: a last chunk carries the token counts, as a whole reply does.
        return {**super().stream_body(messages, tools), "stream_options": {"include_usage": True}}

    def stream_reader(self, on_delta: DeltaSink) -> ReplyReader:
        return stream_reader(SseDecoder(), OpenAIStream(on_delta, self.provider), self.provider)


_REASONING_MODEL = re.compile(r"^(o\d+($|-)|gpt-5(?!-chat))", re.IGNORECASE)


def is_reasoning_model(model_name: str) -> bool:
    """Whether ``model_name`` looks like an OpenAI reasoning model (o1, o3-mini, gpt-5…)."""
    return bool(_REASONING_MODEL.match(model_name))


_NO_INSTRUCTIONS_MODEL = re.compile(r"^o1-(mini|preview)", re.IGNORECASE)


def openai_instruction_role(model_name: str) -> str:
    """The role OpenAI documents for a model's instructions.

    o1-mini and o1-preview refuse both ``system`` and ``developer`` messages, so their
    instructions travel as the first ``user`` message; the other reasoning models (o1,
    o3, o4-mini, gpt-5…) take ``developer``; every other model takes ``system``.
    """
    if _NO_INSTRUCTIONS_MODEL.match(model_name):
        return "user"
    return "developer" if is_reasoning_model(model_name) else "system"


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        },
    }


#: The tag of reasoning state kept from a chat-completions reply (see parse_openai_reply).
REASONING_KIND = "openai-chat"
#: Message fields that carry a provider's reasoning and must go back with the turn:
#: DeepSeek's ``reasoning_content`` (400 "Missing `reasoning_content` field" without it
#: in thinking mode with tools), OpenRouter's ``reasoning_details``.
REASONING_FIELDS = ("reasoning_content", "reasoning_details")


def to_openai_messages(messages: Sequence[LlmMessage], instruction_role: str = "system") -> list[dict[str, Any]]:
    """The ``messages`` array for a conversation; instructions go in ``instruction_role``."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            converted.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
            continue
        role = instruction_role if message.role == "system" else message.role
        entry: dict[str, Any] = {"role": role, "content": message.content}
        if message.name:
            entry["name"] = message.name
        if message.role == "assistant" and message.tool_calls:
            # Null content, not "", is what the API documents for a pure tool-call turn.
            entry["content"] = message.content or None
            entry["tool_calls"] = [_tool_call_to_wire(call) for call in message.tool_calls]
        if message.role == "assistant":
            for state in message.reasoning:
                if state.get("kind") == REASONING_KIND:
                    entry.update({k: v for k, v in state.items() if k in REASONING_FIELDS})
        converted.append(entry)
    return converted


def _tool_call_to_wire(call: ToolCall) -> dict[str, Any]:
    # Echo what the model sent when it was valid; otherwise send what we used ({}), since
    # some OpenAI-compatible servers reject a history holding invalid JSON.
    arguments = (
        call.raw_arguments
        if call.raw_arguments and call.arguments_error is None
        else (json.dumps(dict(call.arguments)))
    )
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def parse_tool_arguments(raw: Any) -> tuple[Mapping[str, Any], str, str | None]:
    """``(arguments, raw_arguments, arguments_error)`` for a tool call's arguments.

    The protocol sends a JSON string; a few compatible servers send the object itself.
    An empty string means "no arguments". Anything that is not a JSON object gives
    ``{}`` and an error the runtime can show the model.
    """
    if isinstance(raw, Mapping):
        return dict(raw), json.dumps(raw), None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, "" if raw is None else raw, None
    if not isinstance(raw, str):
        return {}, json.dumps(raw), f"arguments must be a JSON object, got {type(raw).__name__}"
    try:
        decoded = json.loads(raw)
    except json.JSONDecodeError as error:
        return {}, raw, f"arguments are not valid JSON: {error.msg} at position {error.pos}"
    if not isinstance(decoded, dict):
        kind = "an array" if isinstance(decoded, list) else type(decoded).__name__
        return {}, raw, f"arguments must be a JSON object, got {kind}"
    return decoded, raw, None


def parse_openai_reply(reply: Mapping[str, Any], provider: str, model_name: str) -> ModelResponse:
    """The assistant turn in a chat-completions reply, or LlmMalformedReply."""
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise LlmMalformedReply("reply has no choices", provider)
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise LlmMalformedReply("reply's first choice has no message", provider)
    state = {key: message[key] for key in REASONING_FIELDS if message.get(key)}
    return ModelResponse(
        text=_content_text(message.get("content")),
        tool_calls=tuple(_parse_tool_call(call, provider) for call in enumerate(message.get("tool_calls") or ())),
        usage=_usage(reply.get("usage")),
        model=str(reply.get("model") or model_name),
        reasoning=({"kind": REASONING_KIND, **state},) if state else (),
        truncated=choices[0].get("finish_reason") == "length",
    )


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Some compatible servers answer with content parts.
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _parse_tool_call(indexed: tuple[int, Any], provider: str) -> ToolCall:
    index, call = indexed
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise LlmMalformedReply(f"tool call {index} has no function name", provider)
    arguments, raw, error = parse_tool_arguments(function.get("arguments"))
    call_id = call.get("id") or new_tool_call_id()
    return ToolCall(str(call_id), function["name"], arguments, raw, error)


def _usage(usage: Any) -> Usage:
    return Usage(token_count(usage, "prompt_tokens"), token_count(usage, "completion_tokens"))
