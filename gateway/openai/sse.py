"""Server-sent events for the OpenAI routes: opened only once the chat's first event is
in hand (so a refusal before it is a real HTTP status the SDKs map to their exceptions),
flushed per event, with a comment line on a quiet stream so proxies keep it open."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from aiohttp import web

from gateway.agents.interface import ChatEvent, ChatStream
from gateway.host.responses import HeadersWithFirstWrite, dumps

SSE_TYPE = "text/event-stream"
_HEARTBEAT = b": keep-alive\n\n"


class EventWriter:
    """One SSE response."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        # Each route writes its first chunk right after open(): the headers go out with it.
        self._response = HeadersWithFirstWrite(status=200, headers={
            "Content-Type": SSE_TYPE, "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
        })

    async def open(self) -> None:
        await self._response.prepare(self._request)

    async def send(self, data: dict[str, Any], event: str | None = None) -> None:
        head = f"event: {event}\n".encode() if event else b""
        await self._response.write(head + b"data: " + dumps(data) + b"\n\n")

    async def heartbeat(self) -> None:
        await self._response.write(_HEARTBEAT)

    async def close(self, last: bytes = b"") -> web.StreamResponse:
        await self._response.write_eof(last)
        return self._response


async def paced(stream: ChatStream, heartbeat_seconds: float) -> AsyncGenerator[ChatEvent | None, None]:
    """The chat's events; None after each ``heartbeat_seconds`` without one (0: never).
    The read in flight is never cancelled by the wait (cancelling it cancels the chat)."""
    if heartbeat_seconds <= 0:  # nothing to wait beside the read: no task per event
        async for event in stream:
            yield event
        return
    pending: asyncio.Future[ChatEvent] | None = None
    try:
        while True:
            pending = asyncio.ensure_future(anext(stream))
            while not (await asyncio.wait({pending}, timeout=heartbeat_seconds))[0]:
                yield None
            try:
                event = await pending
            except StopAsyncIteration:
                return
            finally:
                pending = None
            yield event
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
