"""A streamed Anthropic messages reply, read back into a whole one.

Events (Server-Sent Events from Anthropic; on Bedrock each is the base64 ``bytes`` of an
event-stream ``chunk`` frame): ``message_start`` (the message, input usage),
``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` per block
(``text_delta``; ``thinking_delta`` and ``signature_delta`` for thinking blocks, kept
whole with their signature; ``input_json_delta``: a tool's input as pieces of JSON text,
parsed once the block stops), ``message_delta`` (``stop_reason``, output usage),
``message_stop``; ``ping`` is a keep-alive; ``error`` ends the stream with a failure.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.interface import DeltaSink, TextDelta
from neuro_san.llm.streams.framing import SseEvent, incomplete, json_event, stream_failure

#: An error event's type, as the HTTP status Anthropic gives the same failure.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
#: Bedrock exception frames (InvokeModelWithResponseStream), as HTTP statuses.
BEDROCK_EXCEPTION_STATUS = {
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
    "modelTimeoutException": 408,
    "throttlingException": 429,
    "internalServerException": 500,
    "modelStreamErrorException": 500,
    "serviceUnavailableException": 503,
}


class AnthropicStream:
    """The :class:`~neuro_san.llm.streams.framing.Assembler` of Anthropic messages."""

    def __init__(self, on_delta: DeltaSink, provider: str) -> None:
        self._on_delta = on_delta
        self._provider = provider
        self._message: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._stopped = False

    def feed(self, event: SseEvent) -> None:
        self.feed_object(json_event(event.data, self._provider))

    def feed_object(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "error":
            error = data.get("error")
            error = error if isinstance(error, dict) else {}
            status = _ERROR_STATUS.get(str(error.get("type")), 500)
            raise stream_failure(status, str(error.get("message") or error.get("type") or "error"), self._provider)
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self._message = dict(data["message"])
            self._usage.update(_mapping(self._message.get("usage")))
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            self._blocks[_index(data)] = dict(data["content_block"])
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            self._delta(_index(data), data["delta"])
        elif kind == "content_block_stop":
            self._stop_block(_index(data))
        elif kind == "message_delta":
            delta = _mapping(data.get("delta"))
            if delta.get("stop_reason"):
                self._message["stop_reason"] = delta["stop_reason"]
            self._usage.update(_mapping(data.get("usage")))
        elif kind == "message_stop":
            self._stopped = True

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = block.get("text", "") + delta["text"]
            self._on_delta(TextDelta(delta["text"]))
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
            self._on_delta(TextDelta(delta["thinking"], reasoning=True))
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = block.get("signature", "") + delta["signature"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self._json.setdefault(index, []).append(delta["partial_json"])

    def _stop_block(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        block = self._blocks.get(index)
        if pieces is None or block is None:
            return
        raw = "".join(pieces)
        if raw.strip():
            try:
                block["input"] = json.loads(raw)
            except json.JSONDecodeError:
                # Left as text: reading the reply tells the model its input was no object.
                block["input"] = raw

    def reply(self) -> dict[str, Any]:
        if not self._stopped and not self._message.get("stop_reason"):
            raise incomplete(self._provider)
        for index in list(self._json):
            self._stop_block(index)
        return {
            **self._message,
            "content": [block for _, block in sorted(self._blocks.items())],
            "usage": self._usage,
        }


class BedrockAnthropicStream(AnthropicStream):
    """Anthropic events inside Bedrock's event-stream ``chunk`` frames."""

    def feed(self, event: Any) -> None:  # type: ignore[override]  # frames, not SSE events
        headers, payload = event
        message_type = headers.get(":message-type")
        if message_type in ("exception", "error"):
            name = str(headers.get(":exception-type") or headers.get(":error-code") or "")
            detail = json_event(payload.decode("utf-8", "replace") or "{}", self._provider)
            message = detail.get("message") if isinstance(detail, dict) else None
            status = BEDROCK_EXCEPTION_STATUS.get(name, 500)
            raise stream_failure(status, str(message or headers.get(":error-message") or name), self._provider)
        if headers.get(":event-type") != "chunk":
            return
        frame = json_event(payload.decode("utf-8", "replace"), self._provider)
        try:
            inner = base64.b64decode(frame.get("bytes", "") if isinstance(frame, dict) else "")
        except (binascii.Error, ValueError) as error:
            raise LlmMalformedReply("a chunk's bytes are not base64", self._provider) from error
        self.feed_object(json_event(inner.decode("utf-8", "replace"), self._provider))


def _index(data: Mapping[str, Any]) -> int:
    index = data.get("index")
    return index if isinstance(index, int) else 0


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
