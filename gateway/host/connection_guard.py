"""Slow and flooding HTTP clients: deadlines and caps on the gateway's connections.

aiohttp on its own keeps a connection that sent half a request line open for its
keep-alive timeout (an hour by default), and accepts connections until the process runs
out of file descriptors. Here, per connection:

- ``header_seconds``: once the first byte of a request arrives, its request line and
  headers must be complete within this time, or the connection is closed (slowloris).
  This holds for every request on the connection, a pipelined one included (a whole
  request followed by half of another is closed after this, not the idle timeout).
- ``idle_seconds``: a connection with no request in progress and no bytes pending is
  closed after this long (aiohttp's keep-alive timeout, also applied to a connection that
  never sends anything).
- ``write_seconds``: a response write that cannot reach the socket for this long (the
  client stopped reading: the transport's buffer stays over its high-water mark) closes
  the connection at once (an abort: a plain close would wait for the unsent bytes). The
  handler is then cancelled (``handler_cancellation``), and with it the chat behind the
  response, its gRPC or in-process call and so its LLM calls. Every streamed write of
  every front-end waits for the socket (aiohttp's ``StreamResponse.write`` drains), so
  a client that never reads holds at most a socket's buffers, for at most this long.
  0: never.
- ``max_connections`` / ``max_connections_per_address``: past either cap a new connection
  gets an immediate ``503`` with ``Retry-After`` and ``Connection: close`` (a clean
  refusal a client can act on, never a hang); 0 turns a cap off.

Each body read has its own deadline and the whole body one more, enforced by the host's one body reader
(:mod:`gateway.host.body`), which every route's body goes through. The caps count
connections per process (each ``--workers`` process has its own).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_server import Server

from neuro_san.core.env_settings import env_numbers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    header_seconds: float = 10.0
    body_read_seconds: float = 30.0
    body_total_seconds: float = 60.0
    idle_seconds: float = 75.0
    write_seconds: float = 30.0
    max_connections: int = 10_000
    max_connections_per_address: int = 1_000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConnectionLimits:
        """``AGENT_HTTP_*`` settings; a value that is not a number (or is negative) is
        refused here, at start-up, rather than ignored."""
        defaults = cls()
        values = env_numbers(env, _ENV_SETTINGS)
        return cls(**{**defaults.__dict__, **values})


_ENV_SETTINGS: tuple[tuple[str, str, type], ...] = (
    ("AGENT_HTTP_HEADER_TIMEOUT_SECONDS", "header_seconds", float),
    ("AGENT_HTTP_BODY_READ_TIMEOUT_SECONDS", "body_read_seconds", float),
    ("AGENT_HTTP_BODY_TOTAL_TIMEOUT_SECONDS", "body_total_seconds", float),
    ("AGENT_HTTP_IDLE_TIMEOUT_SECONDS", "idle_seconds", float),
    ("AGENT_HTTP_WRITE_TIMEOUT_SECONDS", "write_seconds", float),
    ("AGENT_HTTP_MAX_CONNECTIONS", "max_connections", int),
    ("AGENT_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "max_connections_per_address", int),
)


class ConnectionCounter:
    """Open connections, overall and per client address."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.total = 0
        self.by_address: Counter[str] = Counter()
        self.refused = 0

    def admit(self, address: str) -> str | None:
        """Count a new connection, or return why it is refused."""
        limits = self.limits
        if limits.max_connections and self.total >= limits.max_connections:
            self.refused += 1
            return f"the server has its maximum of {limits.max_connections} open connections"
        if limits.max_connections_per_address and self.by_address[address] >= limits.max_connections_per_address:
            self.refused += 1
            return f"this address has its maximum of {limits.max_connections_per_address} open connections"
        self.total += 1
        self.by_address[address] += 1
        return None

    def release(self, address: str) -> None:
        self.total -= 1
        self.by_address[address] -= 1
        if self.by_address[address] <= 0:
            del self.by_address[address]


def _refusal(reason: str) -> bytes:
    body = json.dumps({"code": 8, "message": f"{reason}; retry later", "details": []}).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class _GuardedRequestHandler(RequestHandler):
    """aiohttp's connection protocol with a request-header deadline and connection caps."""

    def __init__(self, manager: Server, counter: ConnectionCounter, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._counter = counter
        self._address: str | None = None
        self._refused = False
        self._header_deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        reason = self._counter.admit(address)
        if reason is not None:
            self._refused = True
            log.warning("refused a connection from %s: %s", address, reason)
            # A cast, not an isinstance check: uvloop's TCP transport writes but is no
            # subclass of asyncio.WriteTransport (the check refused nothing under uvloop).
            writer = cast(asyncio.WriteTransport, transport)
            writer.write(_refusal(reason))
            writer.close()
            return
        self._address = address
        super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._refused:
            return
        self._cancel_header_deadline()
        self._cancel_write_deadline()
        if self._address is not None:
            self._counter.release(self._address)
            self._address = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        # Bytes that start a request: nothing queued and no body being read. (Bytes
        # that arrive while a request's body is still open are that body, which the
        # body reader's own deadline bounds.)
        starts_request = not self._messages and not self._reading_a_body()
        if data and starts_request and self._header_deadline is None:
            self._arm_header_deadline()
        queued = len(self._messages)
        super().data_received(data)
        if len(self._messages) > queued:  # a request's headers are complete
            self._cancel_header_deadline()
            # The same bytes may also hold the start of the next (pipelined) request,
            # which the parser keeps: its headers get the deadline too, not the idle one.
            if _ends_inside_a_request(data, self._messages[-1]):
                self._arm_header_deadline()

    def pause_writing(self) -> None:
        # The transport's buffer is over its high-water mark: the client is not reading
        # (aiohttp's writer now waits in drain()). Resumed in time, nothing happens.
        super().pause_writing()
        seconds = self._counter.limits.write_seconds
        if seconds > 0 and self._write_deadline is None:
            self._write_deadline = self._loop.call_later(seconds, self._write_too_slow)

    def resume_writing(self) -> None:
        self._cancel_write_deadline()
        super().resume_writing()

    def _cancel_write_deadline(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _write_too_slow(self) -> None:
        self._write_deadline = None
        transport = self.transport
        if transport is None or not self.writing_paused:
            return
        log.info(
            "closed a connection from %s: the client read nothing of its response for %g s"
            " (AGENT_HTTP_WRITE_TIMEOUT_SECONDS); its call is cancelled",
            self._address, self._counter.limits.write_seconds,
        )
        # abort(), not close(): close() would wait for the buffered bytes the client never
        # takes. connection_lost follows, which fails the pending drain and cancels the
        # handler (and so its call).
        transport.abort()

    def _reading_a_body(self) -> bool:
        request = self._current_request
        return self._request_in_progress and request is not None and not request.content.is_eof()

    def _arm_header_deadline(self) -> None:
        self._cancel_header_deadline()
        self._header_deadline = self._loop.call_later(self._counter.limits.header_seconds, self._headers_too_slow)

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self._messages:  # the headers did complete
            return
        if self._request_in_progress:
            # An earlier request is still being answered: its answer is not cut short;
            # the late headers are closed on as soon as it is done.
            self._header_deadline = self._loop.call_later(_RECHECK_SECONDS, self._headers_too_slow)
            return
        log.info("closed a connection from %s: request headers not complete in time", self._address)
        self.force_close()


_RECHECK_SECONDS = 0.2


def _ends_inside_a_request(data: bytes, last: tuple[Any, Any]) -> bool:
    """Whether ``data``, whose bytes completed the headers of the request ``last``, ends
    after that request (with the start of another one) rather than at its end.

    aiohttp's C parser keeps a pipelined partial request to itself, so this is read off
    the bytes: a request without a body ends its chunk with the blank line, one with a
    ``Content-Length`` body with blank line + body, a chunked one with the last chunk.
    A body still being read is bounded by the body deadline instead."""
    message, payload = last
    if not data or not hasattr(message, "headers") or not payload.is_eof():
        return False
    if getattr(message, "chunked", False):
        return not data.endswith(b"0\r\n\r\n")
    try:
        length = int(message.headers.get("Content-Length") or 0)
    except ValueError:
        return False
    if length == 0:
        return not data.endswith(b"\r\n\r\n")
    if len(data) < length + 4:  # the headers came in an earlier chunk
        return False
    return data[len(data) - length - 4:len(data) - length] != b"\r\n\r\n"


class _GuardedServer(Server):
    def __init__(self, counter: ConnectionCounter, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counter = counter

    def __call__(self) -> RequestHandler:
        return _GuardedRequestHandler(self, self.counter, loop=self._loop, **self._kwargs)


LINGER_SECONDS = 2.0


class GuardedAppRunner(web.AppRunner):
    """``web.AppRunner`` whose connections are guarded by :class:`ConnectionLimits`."""

    def __init__(self, app: web.Application, limits: ConnectionLimits, **kwargs: Any) -> None:
        # After an answer sent before its request body was read, aiohttp keeps reading
        # (and discarding) the body for ``lingering_time`` so the client sees the answer;
        # its 10 s default would let a stalled client keep the connection that long.
        super().__init__(app, keepalive_timeout=limits.idle_seconds, lingering_time=LINGER_SECONDS, **kwargs)
        self.counter = ConnectionCounter(limits)

    async def _make_server(self) -> Server:
        plain = await super()._make_server()
        return _GuardedServer(
            self.counter,
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,
            **plain._kwargs,
        )
