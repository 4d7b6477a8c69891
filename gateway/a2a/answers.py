"""The answers the A2A bindings give instead of the SDK's: a JSON-RPC error of our own (before
the SDK sees the request), a chat the service refused, a Redis outage met during the call.
Nothing is sent by then, so each is the whole answer, as the REST API would give it."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from gateway.a2a.outage import met, rest_answer
from gateway.host.errors import RpcFailure
from gateway.host.responses import dumps, json_response


def jsonrpc_error(
    status: int, code: int, message: str, data: Any = None, headers: list[tuple[str, str]] | None = None
) -> web.Response:
    """A JSON-RPC error answer with no request id (the request was not read that far)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    return json_response(status, body, headers)


def refused_chat(request_id: Any, failure: RpcFailure) -> web.Response:
    """A JSON-RPC chat the service refused (rate limit, token budget: 429; busy: 503), answered
    as the REST gateway answers it: the HTTP status, ``Retry-After``, the service's message."""
    error = {"code": failure.jsonrpc_code, "message": failure.message, "data": failure.jsonrpc_data()}
    return json_response(failure.http_status, dumps({"jsonrpc": "2.0", "id": request_id, "error": error}),
                         list(failure.headers()))


def rest_replacement(refusals: list[RpcFailure], state: dict[str, Any]) -> tuple[int, Any, dict[str, str]] | None:
    """(status, body, headers) that answer an HTTP+JSON call instead of the SDK's answer, or
    None: a call that met a Redis outage is answered as one that found it at its start; a
    ``message:send`` the service refused (limits, busy server) with the refusal's HTTP status,
    Status body and Retry-After, as the REST API answers it."""
    outage = met(state)
    if outage is not None:
        return rest_answer(outage)
    if refusals:
        failure = refusals[-1]
        return failure.http_status, {"error": failure.status_dict()}, dict(failure.headers())
    return None
