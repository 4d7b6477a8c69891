"""Provider-shaped reply bodies, written from each provider's API reference, for the
provider fakes (:mod:`tests.fakes.provider_fake`).

Each function returns exactly the JSON a provider documents for a non-streaming reply:
OpenAI-compatible chat completions (with DeepSeek's ``reasoning_content``), Anthropic
messages (with ``thinking`` blocks), Gemini ``generateContent`` (``functionCall`` parts
with ``thoughtSignature``) and Bedrock Converse (``toolUse``, ``stopReason``).
"""

from __future__ import annotations

import json
from typing import Any


def chat_completion(
    text: str | None = None,
    *,
    tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    reasoning_content: str | None = None,
    finish_reason: str | None = None,
    model: str = "deepseek-reasoner",
) -> dict[str, Any]:
    """A chat-completions reply; ``tool_calls`` items are ``(id, name, arguments)`` and an
    empty id is sent as ``""`` (as some OpenAI-compatible servers do)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for call_id, name, args in tool_calls
        ]
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 1764460800,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def openai_error(message: str, *, code: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_message(
    text: str = "",
    *,
    thinking: str | None = None,
    signature: str = "",
    redacted: str | None = None,
    tool_use: tuple[str, str, dict[str, Any]] | None = None,
    stop_reason: str | None = None,
    model: str = "claude-sonnet-5",
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": signature})
    if redacted is not None:
        content.append({"type": "redacted_thinking", "data": redacted})
    if text:
        content.append({"type": "text", "text": text})
    if tool_use is not None:
        content.append({"type": "tool_use", "id": tool_use[0], "name": tool_use[1], "input": tool_use[2]})
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_use else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 9},
    }


def gemini_reply(
    text: str | None = None,
    *,
    function_call: tuple[str, dict[str, Any]] | None = None,
    thought_signature: str | None = None,
    thought_summary: str | None = None,
    finish_reason: str = "STOP",
    model: str = "gemini-3-flash-preview",
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if thought_summary is not None:
        parts.append({"text": thought_summary, "thought": True})
    if function_call is not None:
        part: dict[str, Any] = {"functionCall": {"name": function_call[0], "args": function_call[1]}}
        if thought_signature:
            part["thoughtSignature"] = thought_signature
        parts.append(part)
    if text is not None:
        text_part: dict[str, Any] = {"text": text}
        if thought_signature and function_call is None:
            text_part["thoughtSignature"] = thought_signature
        parts.append(text_part)
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
        "usageMetadata": {
            "promptTokenCount": 20,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 3,
            "totalTokenCount": 28,
        },
        "modelVersion": model,
        "responseId": "resp-1",
    }


def gemini_error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def converse_reply(
    text: str | None = None,
    *,
    tool_use: tuple[str, str, dict[str, Any]] | None = None,
    reasoning: tuple[str, str] | None = None,
    stop_reason: str | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reasoning is not None:
        content.append({"reasoningContent": {"reasoningText": {"text": reasoning[0], "signature": reasoning[1]}}})
    if text is not None:
        content.append({"text": text})
    if tool_use is not None:
        content.append({"toolUse": {"toolUseId": tool_use[0], "name": tool_use[1], "input": tool_use[2]}})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason or ("tool_use" if tool_use else "end_turn"),
        "usage": {"inputTokens": 30, "outputTokens": 8, "totalTokens": 38},
        "metrics": {"latencyMs": 120},
    }
