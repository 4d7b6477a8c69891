"""A streamed Bedrock Converse reply (``/converse-stream``), read back into a whole one.

The reply is AWS event-stream frames (:class:`~neuro_san.llm.streams.framing.EventStreamDecoder`);
the ``:event-type`` header names each JSON payload: ``messageStart``,
``contentBlockStart`` (a tool use's id and name), ``contentBlockDelta`` (``text``,
``toolUse.input`` as pieces of JSON text, ``reasoningContent`` text, signature or
redacted content), ``contentBlockStop``, ``messageStop`` (``stopReason``) and
``metadata`` (``usage``). An ``exception`` frame (``:exception-type``
``throttlingException``…) ends the stream with the failure that status has.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from neuro_san.llm.interface import DeltaSink, TextDelta
from neuro_san.llm.streams.anthropic import BEDROCK_EXCEPTION_STATUS
from neuro_san.llm.streams.framing import incomplete, json_event, stream_failure


class ConverseStream:
    """The :class:`~neuro_san.llm.streams.framing.Assembler` of ``ConverseStream``."""

    def __init__(self, on_delta: DeltaSink, provider: str) -> None:
        self._on_delta = on_delta
        self._provider = provider
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._reply: dict[str, Any] = {}
        self._stopped = False

    def feed(self, event: tuple[Mapping[str, Any], bytes]) -> None:
        headers, payload = event
        data = json_event(payload.decode("utf-8", "replace") or "{}", self._provider)
        data = data if isinstance(data, dict) else {}
        if headers.get(":message-type") in ("exception", "error"):
            name = str(headers.get(":exception-type") or headers.get(":error-code") or "")
            message = data.get("message") or headers.get(":error-message") or name
            raise stream_failure(BEDROCK_EXCEPTION_STATUS.get(name, 500), str(message), self._provider)
        kind = headers.get(":event-type")
        index = data.get("contentBlockIndex")
        index = index if isinstance(index, int) else 0
        if kind == "contentBlockStart":
            start = _mapping(data.get("start"))
            if isinstance(start.get("toolUse"), dict):
                self._blocks[index] = {"toolUse": {**start["toolUse"], "input": {}}}
                self._json[index] = []
        elif kind == "contentBlockDelta":
            self._delta(index, _mapping(data.get("delta")))
        elif kind == "contentBlockStop":
            self._stop_block(index)
        elif kind == "messageStop":
            self._stopped = True
            self._reply["stopReason"] = data.get("stopReason")
        elif kind == "metadata":
            self._reply["usage"] = data.get("usage")

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        if isinstance(delta.get("text"), str):
            block = self._blocks.setdefault(index, {"text": ""})
            block["text"] = block.get("text", "") + delta["text"]
            self._on_delta(TextDelta(delta["text"]))
        elif isinstance(delta.get("toolUse"), dict):
            piece = delta["toolUse"].get("input")
            if isinstance(piece, str):
                self._json.setdefault(index, []).append(piece)
        elif isinstance(delta.get("reasoningContent"), dict):
            reasoning = delta["reasoningContent"]
            block = self._blocks.setdefault(index, {"reasoningContent": {}})["reasoningContent"]
            if isinstance(reasoning.get("redactedContent"), str):
                block["redactedContent"] = block.get("redactedContent", "") + reasoning["redactedContent"]
                return
            text_block = block.setdefault("reasoningText", {"text": ""})
            if isinstance(reasoning.get("text"), str):
                text_block["text"] += reasoning["text"]
                self._on_delta(TextDelta(reasoning["text"], reasoning=True))
            if isinstance(reasoning.get("signature"), str):
                text_block["signature"] = text_block.get("signature", "") + reasoning["signature"]

    def _stop_block(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        block = self._blocks.get(index)
        if pieces is None or block is None or "toolUse" not in block:
            return
        raw = "".join(pieces)
        if raw.strip():
            try:
                block["toolUse"]["input"] = json.loads(raw)
            except json.JSONDecodeError:
                block["toolUse"]["input"] = raw  # the reader tells the model it was no object

    def reply(self) -> dict[str, Any]:
        if not self._stopped:
            raise incomplete(self._provider)
        for index in list(self._json):
            self._stop_block(index)
        content = [block for _, block in sorted(self._blocks.items())]
        return {**self._reply, "output": {"message": {"role": "assistant", "content": content}}}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
