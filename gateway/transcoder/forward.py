"""Forwarding one gRPC call's result to the HTTP client: unary, NDJSON, SSE.

Unary: 200, ``application/json``, Content-Length (the body is buffered anyway),
``Grpc-Metadata-*`` from the initial metadata and ``Grpc-Trailer-*`` from the trailing
metadata as plain headers (aiohttp has no HTTP trailers).

Streams: the call is started and its *first* message (or error, or end) awaited before
any header goes out, so a request that fails up front gets its mapped HTTP status and
the bare Status body, never a 200. After that: 200, one message per line
(``application/json-lines``; each line a ChatResponse, ``\\n``-terminated, written and
flushed per message). An error after the first line is a last line
``{"error": <Status>}``. With ``Accept: text/event-stream`` the same messages are SSE
``data:`` frames, the error an ``event: error`` frame whose data is the Status.

Cancellation: whatever ends the handler (client gone, write error, cancellation by
aiohttp's ``handler_cancellation``) cancels the gRPC call in ``finally``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from aiohttp import web
from google.protobuf.message import Message

from gateway.host.bearer import challenge
from gateway.host.errors import encode_status, rpc_failure
from gateway.host.metadata import Metadata, metadata_to_headers
from gateway.host.responses import HeadersWithFirstWrite, dumps, json_response
from gateway.transcoder.marshal import MessageCodec

log = logging.getLogger(__name__)

NDJSON_TYPE = "application/json-lines"
SSE_TYPE = "text/event-stream"
_SSE_HEARTBEAT = b": keep-alive\n\n"


#: The server's ``request-id`` metadata: the gateway answers the id itself, up front
#: (``stamp_request_id``), so the copy the call ends with is not repeated as a header.
_REQUEST_ID_KEY = "request-id"


def _response_headers(metadata: Metadata | None, prefix: str) -> list[tuple[str, str]]:
    return metadata_to_headers([(k, v) for k, v in metadata or () if k != _REQUEST_ID_KEY], prefix)


def rpc_error_response(error: grpc.aio.AioRpcError, extra: Sequence[tuple[str, str]] = ()) -> web.Response:
    failure = rpc_failure(error)
    headers = [*extra, *_response_headers(error.initial_metadata(), "Grpc-Metadata-")]
    # RFC 9110: a 401 names the scheme it wants (API keys travel as bearer tokens); with
    # OAuth on, also where its metadata is, and a 403 says which scope was missing.
    headers += challenge(failure)
    headers += failure.headers()  # a rate limit says when to retry
    return json_response(failure.http_status, encode_status(failure.status_dict()), headers)


@dataclass(frozen=True, slots=True)
class Forwarder:
    """What forwarding a route's responses needs, prepared at start-up."""

    call: Callable[..., Any]
    codec: MessageCodec
    response_body: str = ""

    def render(self, message: Message) -> bytes:
        if self.response_body:
            return dumps(self.codec.to_dict(message).get(self.response_body))
        return self.codec.to_json(message)

    async def unary(
        self, request_message: Message, metadata: Metadata, deadline: float | None,
        extra_headers: Sequence[tuple[str, str]] = (),
    ) -> web.Response:
        """``extra_headers``: the gateway's own (the request id), on every answer."""
        call = self.call(request_message, metadata=metadata, timeout=deadline)
        try:
            response = await call
            initial = await call.initial_metadata()
            trailing = await call.trailing_metadata()
        except grpc.aio.AioRpcError as error:
            return rpc_error_response(error, extra_headers)
        finally:
            if not call.done():
                call.cancel()
        headers = [*extra_headers, *_response_headers(initial, "Grpc-Metadata-")]
        headers += _response_headers(trailing, "Grpc-Trailer-")
        return json_response(200, self.render(response), headers)

    async def stream(
        self,
        request: web.Request,
        request_message: Message,
        metadata: Metadata,
        deadline: float | None,
        *,
        sse: bool,
        heartbeat_seconds: float = 0,
        extra_headers: Sequence[tuple[str, str]] = (),
    ) -> web.StreamResponse:
        call = self.call(request_message, metadata=metadata, timeout=deadline)
        pending: asyncio.Future[Any] | None = None
        try:
            try:
                first = await call.read()
            except grpc.aio.AioRpcError as error:
                response = rpc_error_response(error, extra_headers)
                return response
            stream = HeadersWithFirstWrite(status=200)
            stream.headers["Content-Type"] = SSE_TYPE if sse else NDJSON_TYPE
            if sse:
                stream.headers["Cache-Control"] = "no-cache"
                stream.headers["X-Accel-Buffering"] = "no"
            for name, value in [*extra_headers, *_response_headers(await call.initial_metadata(), "Grpc-Metadata-")]:
                stream.headers.add(name, value)
            await stream.prepare(request)
            message = first
            heartbeat = heartbeat_seconds if sse and heartbeat_seconds > 0 else 0.0
            at_eof = getattr(call, "at_eof", None)  # only the in-process call has it
            while message is not grpc.aio.EOF:
                frame = self._frame(message, sse)
                # The in-process call knows when the stream has already ended: the last
                # frame then goes out with the end of the body, one write instead of two
                # (the headers too, for a one-message stream). Same bytes either way.
                if at_eof is not None and at_eof() is grpc.aio.EOF:
                    await stream.write_eof(frame)
                    return stream
                await stream.write(frame)
                try:
                    if heartbeat:
                        pending = asyncio.ensure_future(call.read())
                        while not (await asyncio.wait({pending}, timeout=heartbeat))[0]:
                            await stream.write(_SSE_HEARTBEAT)
                        message, pending = pending.result(), None
                    else:
                        message = await call.read()
                except grpc.aio.AioRpcError as error:
                    pending = None
                    status = rpc_failure(error).status_dict()
                    await stream.write(self._error_frame(status, sse))
                    break
                except Exception:  # never end a failed stream without an error line
                    log.exception("gateway error while reading %s", request.path)
                    pending = None
                    internal = {"code": 13, "message": "internal gateway error", "details": []}
                    await stream.write(self._error_frame(internal, sse))
                    break
            await stream.write_eof()
            return stream
        finally:
            if pending is not None and not pending.done():
                pending.cancel()
            if not call.done():
                call.cancel()

    def _frame(self, message: Message, sse: bool) -> bytes:
        body = self.render(message)
        if sse:
            return b"data: " + body + b"\n\n"
        return body + b"\n"

    @staticmethod
    def _error_frame(status: dict[str, Any], sse: bool) -> bytes:
        if sse:
            return b"event: error\ndata: " + encode_status(status) + b"\n\n"
        return dumps({"error": status}) + b"\n"
