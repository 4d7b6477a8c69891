"""The MCP front-end: ``/mcp`` on the HTTP port, Streamable HTTP transport.

It keeps no session state, so any replica serves any request. At 2026-07-28 (see
:mod:`gateway.mcp.modern`) there are no sessions at all; in the handshake era ``initialize`` hands out
an ``Mcp-Session-Id`` (random, not a secret: calls are authenticated by their own
``Authorization``), and every later request is served whatever session id it carries.
The only thing held per process is the set of calls in flight, so that a
``notifications/cancelled`` stops its call: found here, or, with ``AGENT_REDIS_URL``,
published to every replica through the shared state (:mod:`gateway.state`) so the one
running the call stops it (without Redis, one reaching another replica does nothing, as
the spec allows; a client that closes its connection always stops its call).

Requests reach agents only through the agents facade (:mod:`gateway.agents`) over the
invoker, with the caller's headers as metadata, so API keys, access rules, admission limits
and request ids are those of every REST call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

import neuro_san
from gateway.agents.invoked import InvokedAgents
from gateway.host.errors import jsonrpc_refusal
from gateway.host.frontends import FrontEndContext, FrontEndRoute
from gateway.host.json_body import MalformedJson, decode_json
from gateway.host.responses import dumps
from gateway.mcp.calls import ToolCaller
from gateway.mcp.dispatch import Call, Dispatcher
from gateway.mcp.modern import admit, carries_modern_meta, finish, is_modern, unsupported_version
from gateway.mcp.modern import http_status as modern_status
from gateway.mcp.origin import origin_allowed
from gateway.mcp.protocol import (
    BATCHING_VERSIONS,
    DEFAULT_VERSION,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SUPPORTED_VERSIONS,
    JsonRpcError,
    classify,
    notification,
    result_envelope,
)
from gateway.mcp.switch import MCP_PATH
from gateway.mcp.tools import ToolCatalog
from gateway.state import process_state, release_state

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
#: Directory calls (the listing, a description) wait at most this long.
LISTING_TIMEOUT_SECONDS = 30.0
#: Messages in one batch (2025-03-26): a bigger one is refused, not worked through.
MAX_BATCH = 64
_SSE_HEARTBEAT = b": keep-alive\n\n"


#: Turns a dispatcher result into what goes on the wire (the modern era adds its fields).
Finisher = Callable[[dict[str, Any]], dict[str, Any]]


def _as_is(result: dict[str, Any]) -> dict[str, Any]:
    return result


def _own_status(error: JsonRpcError) -> int:
    return error.http_status


class McpFrontEnd:
    """Serves ``POST``/``GET``/``DELETE /mcp``."""

    def __init__(self, context: FrontEndContext) -> None:
        self._context = context
        agents = InvokedAgents.of(context, lookup_seconds=LISTING_TIMEOUT_SECONDS)
        catalog = ToolCatalog(agents)
        caller = ToolCaller(agents)
        self._dispatcher = Dispatcher(catalog, caller, neuro_san.__version__)
        #: (session id, request id) → the task running that request, for notifications/cancelled.
        self._in_flight: dict[tuple[str, Any], asyncio.Task[Any]] = {}
        #: The same calls in the shared index, for a cancellation reaching another replica.
        self._state = process_state()
        self._cancelling: set[asyncio.Task[Any]] = set()

    def routes(self) -> Iterable[FrontEndRoute]:
        return [FrontEndRoute(method, MCP_PATH, "mcp", handler, refusal=jsonrpc_refusal)
                for method, handler in (("POST", self.post), ("GET", self.get), ("DELETE", self.delete))]

    async def close(self) -> None:
        for task in list(self._in_flight.values()):
            task.cancel()
        self._in_flight.clear()
        await release_state()

    # ---- transport -------------------------------------------------------------------

    async def get(self, request: web.Request, _: dict[str, str], _body: bytes) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        # No server-initiated messages to stream: the answer of every revision is 405.
        allow = "POST" if is_modern(request.headers.get(VERSION_HEADER)) else "POST, DELETE"
        return _json(405, _error(None, INVALID_REQUEST, "GET opens no stream here: POST requests to /mcp"),
                     {"Allow": allow})

    async def delete(self, request: web.Request, _: dict[str, str], _body: bytes) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        if is_modern(request.headers.get(VERSION_HEADER)):  # 2026-07-28 has no sessions to end
            return _json(405, _error(None, INVALID_REQUEST, "DELETE ends no session at 2026-07-28: there are none"),
                         {"Allow": "POST"})
        if not request.headers.get(SESSION_HEADER):
            return _json(400, _error(None, INVALID_REQUEST, f"DELETE needs the {SESSION_HEADER} header"))
        return web.Response(status=204)  # nothing is kept per session: ending one is always done

    async def post(self, request: web.Request, _: dict[str, str], raw: bytes) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        version = request.headers.get(VERSION_HEADER, DEFAULT_VERSION).strip()
        modern = is_modern(version)
        if not modern and version not in SUPPORTED_VERSIONS:
            return _json(400, unsupported_version(version).envelope())
        accept = request.headers.get("Accept", "")
        if accept and not any(kind in accept for kind in (JSON_TYPE, SSE_TYPE, "*/*", "application/*")):
            return _json(406, _error(None, INVALID_REQUEST, f"Accept must allow {JSON_TYPE} or {SSE_TYPE}"))
        try:
            body = decode_json(raw)
        except MalformedJson as error:
            return _json(400, _error(None, PARSE_ERROR, f"Parse error: {error}"))
        # The headers never carry the keys the gateway owns (agent-name…): the host's mapper drops them.
        metadata = self._context.metadata(request)
        if modern or (VERSION_HEADER not in request.headers and carries_modern_meta(body)):
            return await self._modern(request, body, accept, metadata)
        # Cancellations are matched within one session and one caller (the handshake era's).
        session = request.headers.get(SESSION_HEADER, "") + "\0" + request.headers.get("Authorization", "")
        if isinstance(body, list):
            return await self._batch(body, version, session, metadata)
        try:
            kind, request_id = classify(body)
        except JsonRpcError as error:
            return _json(400, error.envelope())
        if kind != "request":
            self._notified(body, kind, session)
            return web.Response(status=202)
        method, params = body["method"], body.get("params") or {}
        progress_token = _progress_token(params)
        if method == "tools/call" and progress_token is not None and (not accept or SSE_TYPE in accept):
            return await self._streamed(request, Call(method, params, metadata), request_id, progress_token, session)
        try:
            result = await self._run(Call(method, params, metadata), request_id, session)
        except JsonRpcError as error:
            return _json(error.http_status, error.envelope(request_id), dict(error.headers))
        headers = {SESSION_HEADER: secrets.token_hex(16)} if method == "initialize" else None
        return _json(200, result_envelope(request_id, result), headers)

    # ---- pieces ----------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        origin = request.headers.get("Origin")
        config = self._context.config
        if origin is not None and not origin_allowed(
            origin, request.headers.get("Host"), config.allowed_hosts, config.cors_origins
        ):
            return _json(403, _error(None, INVALID_REQUEST, "Origin not allowed"))
        return None

    async def _run(self, call: Call, request_id: Any, session: str | None) -> dict[str, Any]:
        """Answer one request. A modern one (``session`` None), which only its closed stream
        cancels, is answered in the handler's own task: the handler being cancelled (client
        gone) cancels it. A handshake-era one runs in a task of its own, registered here and
        in the shared state, so that notifications/cancelled can stop it from any replica."""
        if session is None:
            return await self._dispatcher.answer(call)
        work = asyncio.ensure_future(self._dispatcher.answer(call))
        key = (session, request_id)
        self._in_flight[key] = work
        unregister = self._state.register_chat("mcp", _shared_key(key), work.cancel)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if work.cancelled() and not _being_cancelled():
                raise JsonRpcError(REQUEST_CANCELLED, "Request cancelled") from None
            raise
        finally:
            unregister()
            if not work.done():
                work.cancel()
            if self._in_flight.get(key) is work:
                del self._in_flight[key]

    def _notified(self, body: dict[str, Any], kind: str, session: str) -> None:
        if kind == "notification" and body.get("method") == "notifications/cancelled":
            params = body.get("params") or {}
            request_id = params.get("requestId")
            if type(request_id) not in (str, int):  # no request has such an id (an object is unhashable)
                return
            key = (session, request_id)
            task = self._in_flight.get(key)
            if task is not None:
                task.cancel()
            elif self._state.shared:  # maybe running on another replica: tell them all
                sent = asyncio.ensure_future(self._state.cancel_chat("mcp", _shared_key(key)))
                self._cancelling.add(sent)
                sent.add_done_callback(_forget(self._cancelling))

    async def _streamed(
        self, request: web.Request, call: Call, request_id: Any, token: Any, session: str | None,
        finish: Finisher = _as_is, status: Callable[[JsonRpcError], int] = _own_status,
    ) -> web.StreamResponse:
        """tools/call with a progress token: an SSE stream of progress notifications, then
        the result. The stream starts with its first event (or heartbeat), so a request
        refused before any (rate limit, token budget, busy server) still gets its HTTP
        status and ``Retry-After``; a refusal after that is a JSON-RPC error event."""
        stream = web.StreamResponse(status=200, headers={
            "Content-Type": SSE_TYPE, "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
        })
        writing = asyncio.Lock()  # progress events and heartbeats must not interleave

        async def write(chunk: bytes) -> None:
            async with writing:
                if not stream.prepared:
                    await stream.prepare(request)
                await stream.write(chunk)

        async def progress(steps: int, message: str) -> None:
            params = {"progressToken": token, "progress": steps, "message": message}
            await write(_event(notification("notifications/progress", params)))

        async def heartbeat(every: float) -> None:
            # A comment line, ignored by SSE readers, so that proxies keep a quiet stream open.
            with contextlib.suppress(ConnectionError):  # the client left: the call ends too
                while True:
                    await asyncio.sleep(every)
                    await write(_SSE_HEARTBEAT)

        call.progress = progress
        every = self._context.config.keepalive_seconds
        beating = asyncio.ensure_future(heartbeat(every)) if every > 0 else None
        try:
            envelope = result_envelope(request_id, finish(await self._run(call, request_id, session)))
        except JsonRpcError as error:
            envelope = error.envelope(request_id)
            if not stream.prepared and status(error) != 200:  # nothing sent yet: a plain answer
                return _json(status(error), envelope, dict(error.headers))
        finally:
            if beating is not None:
                beating.cancel()
        await write(_event(envelope))
        await stream.write_eof()
        return stream

    async def _modern(
        self, request: web.Request, body: Any, accept: str, metadata: list[tuple[str, Any]]
    ) -> web.StreamResponse:
        """One 2026-07-28 request: checked (:func:`gateway.mcp.modern.admit`), answered
        without any session state, its result finished for the revision. Progress goes on
        the request's own SSE stream; closing that stream (or the connection of a JSON
        answer) cancels the call, its chat and the chat's LLM requests."""
        try:
            admitted = admit(body, request.headers)
        except JsonRpcError as error:
            return _json(modern_status(error), error.envelope(), dict(error.headers))
        if admitted is None:
            return web.Response(status=202)
        request_id = admitted.request_id
        call = Call(admitted.method, admitted.params, metadata, modern=True)
        server_info = self._dispatcher.server_info()

        def finished(result: dict[str, Any]) -> dict[str, Any]:
            return finish(admitted, result, request.headers, server_info)

        token = _progress_token(admitted.params)
        if admitted.method == "tools/call" and token is not None and (not accept or SSE_TYPE in accept):
            return await self._streamed(request, call, request_id, token, None, finished, modern_status)
        try:
            result = finished(await self._run(call, request_id, None))
        except JsonRpcError as error:
            return _json(modern_status(error), error.envelope(request_id), dict(error.headers))
        return _json(200, result_envelope(request_id, result))

    async def _batch(
        self, body: list[Any], version: str, session: str, metadata: list[tuple[str, Any]]
    ) -> web.Response:
        """JSON-RPC batches: allowed by 2025-03-26 only (later revisions removed them)."""
        if version not in BATCHING_VERSIONS:
            return _json(400, _error(None, INVALID_REQUEST, f"Invalid Request: protocol {version} has no batches"))
        if not body:
            return _json(400, _error(None, INVALID_REQUEST, "Invalid Request: an empty batch"))
        if len(body) > MAX_BATCH:
            return _json(400, _error(None, INVALID_REQUEST, f"Invalid Request: more than {MAX_BATCH} messages"))
        answers: list[dict[str, Any]] = []
        for message in body:
            try:
                kind, request_id = classify(message)
            except JsonRpcError as error:
                answers.append(error.envelope())
                continue
            if kind != "request":
                self._notified(message, kind, session)
                continue
            if message["method"] == "initialize":
                answers.append(_error(request_id, INVALID_REQUEST, "initialize must not be part of a batch"))
                continue
            try:
                result = await self._run(Call(message["method"], message.get("params") or {}, metadata),
                                         request_id, session)
                answers.append(result_envelope(request_id, result))
            except JsonRpcError as error:
                answers.append(error.envelope(request_id))
        if not answers:
            return web.Response(status=202)
        return web.Response(status=200, body=dumps(answers), content_type=JSON_TYPE)


def _progress_token(params: dict[str, Any]) -> Any:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    valid = isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))
    return token if valid else None


def _shared_key(key: tuple[str, Any]) -> str:
    """A call's name across replicas: a digest, as the session key holds the caller's credentials."""
    return hashlib.sha256(json.dumps([key[0], key[1]], default=str).encode()).hexdigest()


def _forget(pending: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        pending.discard(task)
        if not task.cancelled():
            task.exception()  # StateUnavailable when Redis is away: logged by the state, nothing to add

    return done


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    return JsonRpcError(code, message, data=data).envelope(request_id)


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> web.Response:
    # Content-Type as a header, last, where aiohttp's content_type argument puts it (the
    # same bytes), without that argument's parsing and rebuilding of the header (~1 µs).
    return web.Response(status=status, body=dumps(payload), headers={**(headers or {}), "Content-Type": JSON_TYPE})


def _event(payload: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + dumps(payload) + b"\n\n"
