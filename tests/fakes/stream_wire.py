"""Streamed replies in each provider's wire format, for :mod:`tests.fakes.stream_fake`.

A :class:`Script` says what the model answers (reasoning, text, tool calls, usage, a cut
off, an error part-way); the renderers turn it into the provider's events, each a whole
frame of bytes, written from the providers' API references:

- OpenAI-compatible chat completions: ``data: {chat.completion.chunk}`` lines, a ``:``
  keep-alive comment, ``finish_reason`` on the last delta, a usage-only final chunk
  (``stream_options.include_usage``), ``data: [DONE]``.
- Anthropic messages: ``message_start`` … ``content_block_*`` (``text_delta``,
  ``thinking_delta`` + ``signature_delta``, ``input_json_delta``) … ``message_delta``,
  ``message_stop``, with ``ping`` keep-alives.
- Gemini ``streamGenerateContent?alt=sse``: a whole ``GenerateContentResponse`` per event
  (thought parts, a signature on a part of its own, ``finishReason`` and cumulative
  ``usageMetadata`` last).
- Bedrock ``ConverseStream`` and ``InvokeModelWithResponseStream``: AWS event-stream
  binary frames (prelude, headers, payload, CRC32s), encoded here by hand so that the
  adapter's botocore parser reads frames it did not write.

:func:`awkward_chunks` cuts a byte string at sizes that land inside UTF-8 characters,
inside lines and inside JSON strings.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: (provider error name or code, message) of an error event.
ErrorEvent = tuple[str, str]


@dataclass(frozen=True)
class Script:
    """What one streamed reply says, in order: reasoning, text, then tool calls."""

    text: str = ""
    reasoning: str = ""
    #: (id, name, arguments); arguments as an object, or raw (even broken) JSON text.
    tool_calls: tuple[tuple[str, str, Mapping[str, Any] | str], ...] = ()
    usage: tuple[int, int] = (11, 7)
    truncated: bool = False
    #: An error event sent after this many text pieces, instead of the rest.
    error_after: int | None = None
    error: ErrorEvent = ("server_error", "the model broke down")
    model: str = "fake-model"
    signature: str = "sig-123"
    #: End the response (cleanly) after this many events, before the reply's last ones.
    stop_after: int | None = None
    extra_headers: Mapping[str, str] = field(default_factory=dict)


def pieces(text: str) -> list[str]:
    """``text`` a word at a time, each with its following spaces."""
    return re.findall(r"\S+\s*|\s+", text)


def json_pieces(arguments: Mapping[str, Any] | str, size: int = 5) -> list[str]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return [raw[i : i + size] for i in range(0, len(raw), size)] or [""]


def awkward_chunks(data: bytes, sizes: tuple[int, ...] = (1, 2, 3, 5, 7, 11, 13)) -> list[bytes]:
    """``data`` cut into chunks of the given sizes, in turn."""
    chunks: list[bytes] = []
    start = 0
    for size in itertools.cycle(sizes):
        if start >= len(data):
            return chunks
        chunks.append(data[start : start + size])
        start += size
    return chunks  # pragma: no cover


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"{head}data: {body}\n\n".encode()


def _texts(script: Script) -> Iterator[tuple[str, str]]:
    """("reasoning"|"text", piece) in order, stopping where the error goes."""
    sent = 0
    for kind, text in (("reasoning", script.reasoning), ("text", script.text)):
        for piece in pieces(text):
            if script.error_after is not None and sent >= script.error_after:
                return
            sent += 1
            yield kind, piece


def _erred(script: Script) -> bool:
    return script.error_after is not None and script.error_after < len(pieces(script.reasoning) + pieces(script.text))


# --- OpenAI-compatible -------------------------------------------------------------------


def openai_events(script: Script) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": script.model, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""}), b": keep-alive\n\n"]
    for kind, piece in _texts(script):
        events.append(chunk({"reasoning_content": piece} if kind == "reasoning" else {"content": piece}))
    if _erred(script):
        name, message = script.error
        events.append(_sse({"error": {"message": message, "type": name, "code": None}}))
        return events
    for index, (call_id, name, arguments) in enumerate(script.tool_calls):
        events.append(chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                            "function": {"name": name, "arguments": ""}}]}))  # fmt: skip
        for part in json_pieces(arguments):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    finish = "length" if script.truncated else "tool_calls" if script.tool_calls else "stop"
    events.append(chunk({}, finish))
    prompt, completion = script.usage
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    events.append(_sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    events.append(_sse("[DONE]"))
    return events


def openai_whole(script: Script) -> dict[str, Any]:
    """The same reply, not streamed (a whole chat completion)."""
    message: dict[str, Any] = {"role": "assistant", "content": script.text or None}
    if script.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for call_id, name, args in script.tool_calls
        ]  # fmt: skip
    prompt, completion = script.usage
    finish = "length" if script.truncated else "tool_calls" if script.tool_calls else "stop"
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "model": script.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }  # fmt: skip


# --- Anthropic ---------------------------------------------------------------------------


def anthropic_objects(script: Script) -> list[dict[str, Any]]:
    prompt, completion = script.usage
    message: dict[str, Any] = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": script.model, "content": [],
        "stop_reason": None, "usage": {"input_tokens": prompt, "output_tokens": 1},
    }  # fmt: skip
    out: list[dict[str, Any]] = [{"type": "message_start", "message": message}, {"type": "ping"}]
    index, open_kind = -1, None
    for kind, piece in _texts(script):
        if kind != open_kind:
            if open_kind == "reasoning":
                out.append({"type": "content_block_delta", "index": index,
                            "delta": {"type": "signature_delta", "signature": script.signature}})  # fmt: skip
            if open_kind is not None:
                out.append({"type": "content_block_stop", "index": index})
            index, open_kind = index + 1, kind
            block = {"type": "thinking", "thinking": ""} if kind == "reasoning" else {"type": "text", "text": ""}
            out.append({"type": "content_block_start", "index": index, "content_block": block})
        delta = (
            {"type": "thinking_delta", "thinking": piece}
            if kind == "reasoning"
            else {"type": "text_delta", "text": piece}
        )
        out.append({"type": "content_block_delta", "index": index, "delta": delta})
    if _erred(script):
        name, text = script.error
        out.append({"type": "error", "error": {"type": name, "message": text}})
        return out
    if open_kind is not None:
        out.append({"type": "content_block_stop", "index": index})
    for call_id, name, arguments in script.tool_calls:
        index += 1
        out.append({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}})  # fmt: skip
        for part in json_pieces(arguments):
            out.append({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part}})  # fmt: skip
        out.append({"type": "content_block_stop", "index": index})
    stop = "max_tokens" if script.truncated else "tool_use" if script.tool_calls else "end_turn"
    out.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": completion}})  # fmt: skip
    out.append({"type": "message_stop"})
    return out


def anthropic_events(script: Script) -> list[bytes]:
    return [_sse(obj, str(obj["type"])) for obj in anthropic_objects(script)]


# --- Gemini ------------------------------------------------------------------------------


def gemini_events(script: Script) -> list[bytes]:
    prompt, completion = script.usage

    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": completion if finish else 1}
        return _sse({"candidates": [candidate], "usageMetadata": usage, "modelVersion": script.model})

    events = []
    for kind, piece in _texts(script):
        events.append(chunk([{"text": piece, "thought": True} if kind == "reasoning" else {"text": piece}]))
    if _erred(script):
        code, message = script.error
        events.append(_sse({"error": {"code": int(code) if code.isdigit() else 500, "message": message}}))
        return events
    if script.text:
        events.append(chunk([{"text": "", "thoughtSignature": script.signature}]))
    calls = [{"functionCall": {"name": name, "args": arguments}} for _, name, arguments in script.tool_calls]
    finish = "MAX_TOKENS" if script.truncated else "STOP"
    events.append(chunk(calls, finish))
    return events


# --- Bedrock (AWS event stream) ----------------------------------------------------------


def event_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude, string headers, payload, CRC32s."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += struct.pack("!B", len(raw_name)) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", zlib.crc32(message))


def _event(kind: str, payload: Mapping[str, Any]) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return event_frame(headers, json.dumps(payload, ensure_ascii=False).encode())


def _exception(name: str, message: str) -> bytes:
    headers = {":exception-type": name, ":content-type": "application/json", ":message-type": "exception"}
    return event_frame(headers, json.dumps({"message": message}).encode())


def converse_events(script: Script) -> list[bytes]:
    events = [_event("messageStart", {"role": "assistant"})]
    index, open_kind = -1, None
    for kind, piece in _texts(script):
        if kind != open_kind:
            if open_kind == "reasoning":
                events.append(_event("contentBlockDelta", {"contentBlockIndex": index,
                                     "delta": {"reasoningContent": {"signature": script.signature}}}))  # fmt: skip
            if open_kind is not None:
                events.append(_event("contentBlockStop", {"contentBlockIndex": index}))
            index, open_kind = index + 1, kind
        delta = {"reasoningContent": {"text": piece}} if kind == "reasoning" else {"text": piece}
        events.append(_event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
    if _erred(script):
        events.append(_exception(*script.error))
        return events
    if open_kind is not None:
        events.append(_event("contentBlockStop", {"contentBlockIndex": index}))
    for call_id, name, arguments in script.tool_calls:
        index += 1
        events.append(_event("contentBlockStart", {"contentBlockIndex": index,
                             "start": {"toolUse": {"toolUseId": call_id, "name": name}}}))  # fmt: skip
        for part in json_pieces(arguments):
            events.append(_event("contentBlockDelta", {"contentBlockIndex": index,
                                 "delta": {"toolUse": {"input": part}}}))  # fmt: skip
        events.append(_event("contentBlockStop", {"contentBlockIndex": index}))
    stop = "max_tokens" if script.truncated else "tool_use" if script.tool_calls else "end_turn"
    events.append(_event("messageStop", {"stopReason": stop}))
    prompt, completion = script.usage
    usage = {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion}
    events.append(_event("metadata", {"usage": usage, "metrics": {"latencyMs": 5}}))
    return events


def bedrock_invoke_events(script: Script) -> list[bytes]:
    """Anthropic's events, each base64 in a ``chunk`` frame; an error as an exception frame."""
    events = []
    for obj in anthropic_objects(script):
        if obj["type"] == "error":
            events.append(_exception("modelStreamErrorException", obj["error"]["message"]))
            continue
        raw = base64.b64encode(json.dumps(obj, ensure_ascii=False).encode()).decode()
        events.append(_event("chunk", {"bytes": raw}))
    return events
