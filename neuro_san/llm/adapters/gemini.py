"""Gemini's native wire protocol (``POST {base}/v1beta/models/{model}:generateContent``).

What this module absorbs (from the Gemini API reference):

- Roles are ``user`` and ``model``; instructions go in ``systemInstruction``.
- The model calls tools with ``functionCall`` parts (``name``, ``args`` object, an ``id``
  on newer models); results go back as ``functionResponse`` parts in a ``user`` turn,
  whose ``response`` must be an object (``{"result": <text>}``).
- Gemini 2.5+/3 attach a ``thoughtSignature`` to parts (function calls above all) and
  require each part back *with* its signature in the next request of the conversation.
  So a model turn's parts are kept verbatim as its reasoning state and replayed as they
  came; ``thought: true`` parts (summaries, with ``include_thoughts``) never become answer
  text.
- ``finishReason: MAX_TOKENS`` is a cut-off answer.
- Function parameters are an OpenAPI subset: keys it does not take
  (``additionalProperties``, ``$schema``…) are dropped.

Auth is the ``x-goog-api-key`` header (set by the provider layer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from neuro_san.llm.adapters.http_model import HttpJsonModel, renamed_action
from neuro_san.llm.adapters.reply_parts import ObjectArgumentsCall, token_count
from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.http import Endpoint, ReplyReader
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelResponse, ToolCall, ToolSpec, Usage
from neuro_san.llm.streams.framing import SseDecoder, stream_reader
from neuro_san.llm.streams.gemini import GeminiStream
from neuro_san.llm.turns import alternating_turns

REASONING_KIND = "gemini"
_FUNCTION_CALL = ObjectArgumentsCall(
    id_key="id",
    arguments_key="args",
    # Older models send no id; ours starts with gemini_ so it is never sent back as one.
    id_prefix="gemini_",
    where="functionCall in part {index}",
    complaint="args must be a JSON object",
    missing_is_empty=True,
)
#: Schema keys Gemini's ``parameters`` (OpenAPI subset) does not accept.
_UNSUPPORTED_SCHEMA_KEYS = frozenset({"additionalProperties", "$schema", "$ref", "$defs", "definitions", "examples"})


class GeminiModel(HttpJsonModel):
    """A :class:`~neuro_san.llm.interface.Model` over ``generateContent``, or
    ``streamGenerateContent?alt=sse`` when asked for deltas (:mod:`~neuro_san.llm.streams.gemini`).

    ``extra_fields`` are extra ``generationConfig`` fields (``topK``,
    ``thinkingConfig``…), already in Gemini's spelling.
    """

    def request_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system, contents = to_gemini_contents(messages)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if tools:
            body["tools"] = [{"functionDeclarations": [to_gemini_function(tool) for tool in tools]}]
        generation = dict(self._extra_fields)
        if self._temperature is not None:
            generation["temperature"] = self._temperature
        if self._max_tokens is not None:
            generation["maxOutputTokens"] = self._max_tokens
        if generation:
            body["generationConfig"] = generation
        return body

    def parse_reply(self, reply: Mapping[str, Any]) -> ModelResponse:
        return parse_gemini_reply(reply, self._endpoint.provider, self._model_name)

    def stream_endpoint(self) -> Endpoint:
        return renamed_action(self._endpoint, ":generateContent", ":streamGenerateContent", "alt=sse")

    def stream_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        return self.request_body(messages, tools)  # the method streams; the body is the same

    def stream_reader(self, on_delta: DeltaSink) -> ReplyReader:
        return stream_reader(SseDecoder(), GeminiStream(on_delta, self.provider), self.provider)


def to_gemini_function(tool: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    parameters = gemini_schema(tool.parameters)
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` without the keys Gemini refuses."""
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _UNSUPPORTED_SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            result[key] = {name: gemini_schema(sub) if isinstance(sub, Mapping) else sub for name, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            result[key] = gemini_schema(value)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            result[key] = [gemini_schema(sub) for sub in value if isinstance(sub, Mapping)]
        elif key == "type" and isinstance(value, list):
            # OpenAPI's Schema has one type; ["string", "null"] is a nullable string.
            named = [name for name in value if name != "null"]
            if named:
                result["type"] = named[0]
            if "null" in value:
                result["nullable"] = True
        else:
            result[key] = value
    return result


def to_gemini_contents(messages: Sequence[LlmMessage]) -> tuple[str, list[dict[str, Any]]]:
    """``(system instruction, contents)``; consecutive same-role turns are merged."""
    return alternating_turns(messages, _parts, assistant_role="model", items_key="parts")


def _parts(message: LlmMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        response: dict[str, Any] = {"name": message.name or "", "response": {"result": message.content}}
        if message.tool_call_id and not message.tool_call_id.startswith("gemini_"):
            response["id"] = message.tool_call_id
        return [{"functionResponse": response}]
    if message.role == "assistant":
        kept = [state["parts"] for state in message.reasoning if state.get("kind") == REASONING_KIND]
        if kept:
            # The turn exactly as Gemini sent it: signatures stay on their parts.
            return [dict(part) for part in kept[0]]
        parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
        parts.extend({"functionCall": {"name": call.name, "args": dict(call.arguments)}} for call in message.tool_calls)
        return parts
    return [{"text": message.content or " "}]


def parse_gemini_reply(reply: Mapping[str, Any], provider: str, model_name: str) -> ModelResponse:
    candidates = reply.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
        feedback = reply.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        raise LlmMalformedReply(f"reply has no candidates{f' (prompt blocked: {reason})' if reason else ''}", provider)
    candidate = candidates[0]
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        parts = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise LlmMalformedReply(f"part {index} is not an object", provider)
        if part.get("thought"):
            continue  # a thought summary: reasoning, never answer text
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            calls.append(_FUNCTION_CALL.read(index, call, provider))
    signed = any(isinstance(p, Mapping) and p.get("thoughtSignature") for p in parts)
    reasoning = ({"kind": REASONING_KIND, "parts": [dict(p) for p in parts]},) if signed or calls else ()
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=_usage(reply.get("usageMetadata")),
        model=str(reply.get("modelVersion") or model_name),
        reasoning=reasoning,
        truncated=candidate.get("finishReason") == "MAX_TOKENS",
    )


def _usage(usage: Any) -> Usage:
    # Thinking tokens are billed as output.
    output = token_count(usage, "candidatesTokenCount") + token_count(usage, "thoughtsTokenCount")
    return Usage(token_count(usage, "promptTokenCount"), output)
