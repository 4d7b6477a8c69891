"""Reading a streamed reply: the framings providers use, and one read loop for all.

A streamed reply arrives in network chunks that cut anywhere: inside a UTF-8 character,
inside a line, inside a JSON string. The framings here buffer across chunks and hand
out only whole events:

- :class:`SseDecoder`: Server-Sent Events (OpenAI-compatible chat completions, Anthropic
  messages, Gemini ``streamGenerateContent?alt=sse``), as the WHATWG spec reads them:
  ``\\n``, ``\\r\\n`` or ``\\r`` line ends, ``:`` comments (keep-alives) skipped, multi-line
  ``data``, an event dispatched at each blank line.
- :class:`EventStreamDecoder`: AWS's binary event-stream framing (Bedrock
  ``ConverseStream`` and ``InvokeModelWithResponseStream``), parsed by botocore's own
  parser (prelude and message CRCs checked), which Bedrock already needs for signing.

Each provider's adapter supplies an :class:`Assembler`: it is fed the decoded events in
order, tells the delta sink each piece of text as it comes, and finally gives the reply
object in the provider's *non-streaming* shape, so the adapter's ``parse_reply`` reads a
streamed reply exactly as it reads a whole one (tool calls, usage, truncation alike).
The assemblers run once per token: they test decoded JSON with ``isinstance(x, dict)``
(``json`` only makes dicts), not against the ``Mapping`` ABC, whose check was a measurable
share of the server's CPU per token.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from neuro_san.llm.errors import LlmConnectionError, LlmError, LlmMalformedReply, http_failure
from neuro_san.llm.http import ReplyReader, redact_url

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One Server-Sent Event: its ``event`` name (``message`` when unnamed) and data."""

    event: str
    data: str


class SseDecoder:
    """Bytes in, whole :class:`SseEvent` out; see the module docstring."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        return self._lines(self._pending + self._text.decode(chunk))

    def close(self) -> list[SseEvent]:
        """The events left when the stream ends (a last event without its blank line)."""
        events = self._lines(self._pending + self._text.decode(b"", final=True) + "\n")
        events.extend(self._dispatch())
        return events

    def _lines(self, text: str) -> list[SseEvent]:
        # A trailing "\r" may be the first half of "\r\n": keep it for the next chunk.
        keep = 1 if text.endswith("\r") else 0
        lines = _LINE_END.split(text[: len(text) - keep] if keep else text)
        self._pending = lines.pop() + ("\r" if keep else "")
        events: list[SseEvent] = []
        for line in lines:
            if not line:
                events.extend(self._dispatch())
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "data":
                    self._data.append(value)
                elif name == "event":
                    self._event = value
        return events

    def _dispatch(self) -> list[SseEvent]:
        event, data, self._event, self._data = self._event, self._data, "", []
        return [SseEvent(event or "message", "\n".join(data))] if data else []


class EventStreamDecoder:
    """AWS event-stream frames in, ``(headers, payload)`` messages out (botocore's parser)."""

    def __init__(self) -> None:
        # botocore is imported when a Bedrock stream starts: it is an optional
        # dependency, checked when a Bedrock network loads.
        from botocore.eventstream import EventStreamBuffer

        self._buffer = EventStreamBuffer()

    def feed(self, chunk: bytes) -> list[tuple[Mapping[str, Any], bytes]]:
        from botocore.eventstream import ParserError

        self._buffer.add_data(chunk)
        try:
            return [(message.headers, message.payload) for message in self._buffer]
        except ParserError as error:
            raise LlmMalformedReply(f"broken event-stream frame: {error}", "bedrock") from error

    def close(self) -> list[tuple[Mapping[str, Any], bytes]]:
        return []


class Framing(Protocol):
    """Turns chunks into events (:class:`SseDecoder`, :class:`EventStreamDecoder`)."""

    def feed(self, chunk: bytes) -> list[Any]: ...

    def close(self) -> list[Any]: ...


class Assembler(Protocol):
    """One provider's reading of its stream's events (see the module docstring)."""

    def feed(self, event: Any) -> None:
        """Take one event; raise an LlmError for an error event."""
        ...

    def reply(self) -> dict[str, Any]:
        """The whole reply, in the shape of the provider's non-streaming reply; an
        LlmError when the stream ended before the reply did."""
        ...


def stream_reader(framing: Framing, assembler: Assembler, provider: str) -> ReplyReader:
    """The :data:`ReplyReader` that runs ``assembler`` over a reply framed by ``framing``."""

    async def read(response: aiohttp.ClientResponse) -> dict[str, Any]:
        where = redact_url(str(response.url))
        if response.content_type == "application/json":
            # A server (or proxy) that ignored the request to stream and answered whole:
            # the reply is already in the shape the assembler would have built.
            return await _whole_reply(response, provider, where)
        try:
            async for chunk in response.content.iter_any():
                for event in framing.feed(chunk):
                    assembler.feed(event)
            for event in framing.close():
                assembler.feed(event)
        except aiohttp.ClientError as error:
            response.close()
            raise LlmConnectionError(
                f"the stream from {where} broke off: {type(error).__name__}", provider
            ) from error
        except BaseException:
            # Cancelled (the client went away), or an error event: drop the connection now
            # rather than letting the pool read the rest of the stream.
            response.close()
            raise
        return assembler.reply()

    return read


async def _whole_reply(response: aiohttp.ClientResponse, provider: str, where: str) -> dict[str, Any]:
    try:
        body = await response.read()
    except aiohttp.ClientError as error:
        raise LlmConnectionError(f"the reply from {where} broke off: {type(error).__name__}", provider) from error
    reply = json_event(body.decode("utf-8", "replace"), provider)
    if not isinstance(reply, dict):
        raise LlmMalformedReply(f"reply from {where} is JSON but not an object", provider)
    return reply


def json_event(data: str, provider: str) -> Any:
    """The JSON value of one event's data, or LlmMalformedReply."""
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        raise LlmMalformedReply(f"stream event is not JSON: {data[:120]!r}", provider) from error


def stream_failure(status: int, message: str, provider: str, where: str = "the provider") -> LlmError:
    """The error for a provider's error event mid-stream, mapped as the same failure
    would be as an HTTP status (``status``: the status the provider gives that error)."""
    body = json.dumps({"error": {"message": message}}).encode()
    return http_failure(status, body, None, [], provider, f"{where}, mid-stream", "", "", retried=False)


def incomplete(provider: str) -> LlmConnectionError:
    return LlmConnectionError("the stream ended before the reply was complete", provider)


def iter_text(value: Any) -> Iterator[str]:
    """``value`` when it is a non-empty string (a delta's text), else nothing."""
    if isinstance(value, str) and value:
        yield value
