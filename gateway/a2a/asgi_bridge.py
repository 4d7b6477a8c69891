"""Run an ASGI application (the a2a-sdk's Starlette pieces) for one aiohttp request.

The a2a-sdk's JSON-RPC dispatcher and its SSE responses are Starlette/ASGI objects; our
HTTP port is aiohttp. Rather than re-write the protocol handling, each request is handed
to the SDK as an ASGI call: the scope is built from the aiohttp request, ``receive``
yields the already-read body and then waits for the client to go away, and ``send``
writes straight into an aiohttp :class:`~aiohttp.web.StreamResponse` (so SSE frames go
out as the SDK produces them, not buffered). A JSON-RPC answer that is not a stream skips
the round trip: the dispatcher gets a Starlette request (:func:`sdk_request`) and its
whole answer becomes an aiohttp response (:func:`whole_response`).

The SDK parses the body it is handed itself, and answers what its parser cannot take
(bytes that are not UTF-8, deep nesting, huge integers) as a 500 with a traceback in the
log; so a body goes to it only once the host's one decoder (gateway/host/json_body.py)
passed it: the JSON-RPC binding decodes it anyway, the HTTP+JSON one asks
:func:`malformed_rest_body`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError, InternalError
from aiohttp import web
from google.protobuf.json_format import ParseError
from starlette.requests import Request
from starlette.responses import Response

from gateway.host.client_errors import quiet_logged_refusals
from gateway.host.json_body import MalformedJson, decode_json
from gateway.host.responses import dumps, json_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: How often ``receive`` looks whether the client went away (aiohttp does not say).
_DISCONNECT_POLL_SECONDS = 0.2
#: The most of an ``A2A-Version`` header the SDK sees: a version is a few characters, and
#: the SDK's parse of a 7,000-digit one failed as an internal error (500) instead of
#: answering VersionNotSupported, echoing the whole value (the gRPC binding cuts it alike).
_VERSION_HEADER = b"a2a-version"
_MAX_VERSION_BYTES = 20


def _headers(request: web.Request) -> list[tuple[bytes, bytes]]:
    headers = [(name.lower(), value) for name, value in request.raw_headers]
    return [(name, value[:_MAX_VERSION_BYTES] if name == _VERSION_HEADER else value) for name, value in headers]


def quiet_sdk_refusals() -> None:
    """The SDK logs a client's mistake as an ERROR (with a traceback), then answers it and
    logs the answer as a WARNING: the first becomes a DEBUG line, so a client's mistake is
    one WARNING (idempotent). Its JSON-RPC dispatcher for a malformed request (-32600,
    -32602); its active task, twice (producer and consumer), for an A2A error the executor
    raised on the request (bad ``metadata.neuro_san``: -32602; not an internal error); its
    request handler for a capability the card does not offer (the extended card)."""
    quiet_logged_refusals("a2a.server.routes.jsonrpc_dispatcher",
                          ("Failed to validate base JSON-RPC request", "Failed to parse request params"))
    quiet_logged_refusals("a2a.server.agent_execution.active_task", errors=(A2AError,), excluding=(InternalError,))
    quiet_logged_refusals("a2a.server.request_handlers.request_handler", ("Validation failure: %s",))


def malformed_rest_body(raw: bytes) -> web.Response | None:
    """The HTTP+JSON binding's 400 for a body the host's decoder refuses, in the SDK's own
    shape for a parse error (``{"error": {"code": 400, "status": "INVALID_ARGUMENT", ...}}``);
    None for an empty or acceptable body."""
    if not raw.strip():
        return None
    try:
        decode_json(raw)
    except MalformedJson as error:
        payload = build_rest_error_payload(ParseError(f"Parse error: {error}"))
        return json_response(400, dumps(payload))
    return None


def build_scope(request: web.Request, extra: dict[str, Any]) -> Scope:
    """The ASGI ``http`` scope of an aiohttp request; ``extra`` keys ride along in it."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    client = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) and len(peer) >= 2 else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1", "replace"),
        "query_string": request.query_string.encode("latin-1", "replace"),
        "root_path": "",
        "headers": _headers(request),
        "client": client,
        "server": None,
        "state": {},
        **extra,
    }


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


class _Responder:
    """The ``send`` side: ASGI response messages → one aiohttp StreamResponse."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self.finished = False

    async def send(self, message: Message) -> None:
        kind = message.get("type")
        if kind == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for raw_name, raw_value in message.get("headers", []):
                name = raw_name.decode("latin-1")
                if name.lower() in ("content-length", "transfer-encoding", "connection"):
                    continue  # aiohttp frames the body itself
                response.headers.add(name, raw_value.decode("latin-1"))
            self.response = response
        elif kind == "http.response.body":
            if self.response is None:
                raise RuntimeError("ASGI body before response start")
            if _client_gone(self.request):
                raise ConnectionResetError("client went away")
            if not self.response.prepared:
                await self.response.prepare(self.request)
            body = message.get("body", b"")
            if body:
                await self.response.write(body)
            if not message.get("more_body", False) and not self.finished:
                self.finished = True
                await self.response.write_eof()


def sdk_request(request: web.Request, body: bytes, extra: dict[str, Any]) -> Request:
    """The Starlette request the SDK's JSON-RPC dispatcher reads: ``body`` (what the host's
    guarded reader read), the scope of :func:`build_scope`. Nothing else is ever received."""
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(build_scope(request, extra), receive)


def whole_response(response: Response) -> web.Response:
    """An answer the SDK made whole (a JSONResponse) as the aiohttp response: no ASGI round
    trip for what is one status, its headers and one body."""
    headers = [(name, value) for name, value in response.headers.items()
               if name.lower() not in ("content-length", "transfer-encoding", "connection")]
    return web.Response(status=response.status_code, body=response.body, headers=headers)


async def call_asgi(app: AsgiApp, request: web.Request, body: bytes, extra: dict[str, Any]) -> web.StreamResponse:
    """Serve ``request`` with ``app``; ``body`` is what the host's guarded reader read."""
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        while not _client_gone(request):  # noqa: ASYNC110 - aiohttp has no disconnect event to await
            await asyncio.sleep(_DISCONNECT_POLL_SECONDS)
        return {"type": "http.disconnect"}

    responder = _Responder(request)
    try:
        await app(build_scope(request, extra), receive, responder.send)
    except ConnectionResetError:
        if responder.response is None or not responder.response.prepared:
            raise
        return responder.response  # the client left mid-stream: nothing more to write
    if responder.response is None:
        raise web.HTTPInternalServerError(text="the A2A handler sent no response")
    if not responder.response.prepared:
        await responder.response.prepare(request)
    if not responder.finished:
        responder.finished = True
        await responder.response.write_eof()
    return responder.response
