"""A streamed chat-completions reply (``"stream": true``), read back into a whole one.

The stream is Server-Sent Events, each ``data:`` a ``chat.completion.chunk``: the
first choice's ``delta`` carries pieces of ``content``, of the reasoning
(``reasoning_content`` from DeepSeek, ``reasoning`` from vLLM, Ollama and OpenRouter,
``reasoning_details`` lists from OpenRouter) and of tool calls (by ``index``: the id and
name first, then ``function.arguments`` in pieces). ``finish_reason`` comes on the last
delta; with ``stream_options.include_usage`` a last chunk with empty ``choices`` carries
``usage``; ``data: [DONE]`` ends the stream. A server error mid-stream is a chunk
``{"error": {...}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from neuro_san.llm.interface import DeltaSink, TextDelta
from neuro_san.llm.streams.framing import SseEvent, incomplete, json_event, stream_failure

#: An error chunk's type or code, as the HTTP status the same failure has.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "overloaded_error": 503,
}


class OpenAIStream:
    """The :class:`~neuro_san.llm.streams.framing.Assembler` of chat completions."""

    def __init__(self, on_delta: DeltaSink, provider: str) -> None:
        self._on_delta = on_delta
        self._provider = provider
        self._text: list[str] = []
        self._reasoning_content: list[str] = []
        self._reasoning_details: list[Any] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._done = False
        self._usage: Any = None
        self._model: Any = None

    def feed(self, event: SseEvent) -> None:
        if event.data.strip() == "[DONE]":
            self._done = True
            return
        chunk = json_event(event.data, self._provider)
        if not isinstance(chunk, dict):
            return
        if "error" in chunk:
            raise _error(chunk["error"], self._provider)
        self._model = chunk.get("model") or self._model
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        self._finish = choice.get("finish_reason") or self._finish
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._delta(delta)

    def _delta(self, delta: Mapping[str, Any]) -> None:
        for key in ("reasoning_content", "reasoning"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                if key == "reasoning_content":
                    self._reasoning_content.append(piece)
                self._on_delta(TextDelta(piece, reasoning=True))
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            self._reasoning_details.extend(details)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            self._on_delta(TextDelta(content))
        for position, call in enumerate(delta.get("tool_calls") or ()):
            if isinstance(call, dict):
                self._call_piece(position, call)

    def _call_piece(self, position: int, call: Mapping[str, Any]) -> None:
        index = call.get("index")
        entry = self._calls.setdefault(index if isinstance(index, int) else position, {"arguments": []})
        if call.get("id") and not entry.get("id"):
            entry["id"] = call["id"]
        function = call.get("function")
        if not isinstance(function, dict):
            return
        if function.get("name") and not entry.get("name"):
            entry["name"] = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            entry["arguments"].append(arguments)
        elif isinstance(arguments, dict):
            # Some compatible servers send each call whole, arguments as an object.
            entry["arguments"].append(json.dumps(arguments))

    def reply(self) -> dict[str, Any]:
        if not self._done and self._finish is None:
            raise incomplete(self._provider)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": entry.get("id") or "",
                    "type": "function",
                    "function": {"name": entry.get("name"), "arguments": "".join(entry["arguments"])},
                }
                for _, entry in sorted(self._calls.items())
            ]
        if self._reasoning_content:
            message["reasoning_content"] = "".join(self._reasoning_content)
        if self._reasoning_details:
            message["reasoning_details"] = self._reasoning_details
        reply: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": self._finish}]}
        if self._usage is not None:
            reply["usage"] = self._usage
        if self._model:
            reply["model"] = self._model
        return reply


def _error(error: Any, provider: str) -> Exception:
    if not isinstance(error, dict):
        return stream_failure(500, str(error), provider)
    code, kind = error.get("code"), error.get("type")
    if isinstance(code, int) and 400 <= code < 600:
        status = code
    else:
        status = _ERROR_STATUS.get(str(code), _ERROR_STATUS.get(str(kind), 500))
    return stream_failure(status, str(error.get("message") or kind or "stream error"), provider)
