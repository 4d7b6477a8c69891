"""A streamed Gemini reply (``:streamGenerateContent?alt=sse``), read back into a whole one.

Each Server-Sent Event's data is a whole ``GenerateContentResponse`` holding the *new*
parts of the first candidate: text pieces (``thought: true`` for thought summaries),
whole ``functionCall`` parts, and ``thoughtSignature``s, which may come on a part of
their own with empty text. ``usageMetadata`` is cumulative (the last one counts) and the
last chunk has ``finishReason``. An error mid-stream is ``{"error": {code, message}}``.

Text pieces are joined into one part per run of the same kind, so the kept turn (replayed
to Gemini with its signatures) is the one a non-streaming call would have given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuro_san.llm.interface import DeltaSink, TextDelta
from neuro_san.llm.streams.framing import SseEvent, incomplete, json_event, stream_failure


class GeminiStream:
    """The :class:`~neuro_san.llm.streams.framing.Assembler` of ``streamGenerateContent``."""

    def __init__(self, on_delta: DeltaSink, provider: str) -> None:
        self._on_delta = on_delta
        self._provider = provider
        self._parts: list[dict[str, Any]] = []
        self._candidate: dict[str, Any] = {}
        self._reply: dict[str, Any] = {}

    def feed(self, event: SseEvent) -> None:
        chunk = json_event(event.data, self._provider)
        if not isinstance(chunk, dict):
            return
        error = chunk.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            status = code if isinstance(code, int) and 400 <= code < 600 else 500
            raise stream_failure(status, str(error.get("message") or error.get("status") or "error"), self._provider)
        for key in ("usageMetadata", "modelVersion", "promptFeedback"):
            if key in chunk:
                self._reply[key] = chunk[key]
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
            return
        candidate = candidates[0]
        if candidate.get("finishReason"):
            self._candidate["finishReason"] = candidate["finishReason"]
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                self._part(part)

    def _part(self, part: Mapping[str, Any]) -> None:
        text = part.get("text")
        thought = bool(part.get("thought"))
        if isinstance(text, str) and text:
            self._on_delta(TextDelta(text, reasoning=thought))
        last = self._parts[-1] if self._parts else None
        joinable = (
            isinstance(text, str)
            and set(part) <= {"text", "thought", "thoughtSignature"}
            and last is not None
            and isinstance(last.get("text"), str)
            and bool(last.get("thought")) == thought
            and not last.get("thoughtSignature")
        )
        if joinable and last is not None:
            last["text"] += text
            if part.get("thoughtSignature"):
                last["thoughtSignature"] = part["thoughtSignature"]
        else:
            self._parts.append(dict(part))

    def reply(self) -> dict[str, Any]:
        if "finishReason" not in self._candidate and "promptFeedback" not in self._reply:
            raise incomplete(self._provider)
        if not self._parts and "finishReason" not in self._candidate:
            return dict(self._reply)  # a blocked prompt: no candidates, as a whole reply
        candidate = {**self._candidate, "content": {"role": "model", "parts": self._parts}}
        return {**self._reply, "candidates": [candidate]}
