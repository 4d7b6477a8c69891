"""The sessionless revision (2026-07-28) on ``/mcp``, beside the handshake revisions.

A request is modern when its ``MCP-Protocol-Version`` header names a modern revision
(as the official SDK's server routes it); everything else keeps the handshake era's
rules (:mod:`gateway.mcp.frontend`). A modern request is one self-contained POST: no
``initialize``, no session, its protocol version and client capabilities in
``params._meta``, mirrored in the ``MCP-Protocol-Version`` / ``Mcp-Method`` /
``Mcp-Name`` headers.

The checks are the SDK's own, so what we accept and refuse is what its clients expect:
:func:`mcp.shared.inbound.classify_inbound_request` (the ``_meta`` envelope, the header
/ body match, the version; its first failing rung wins) and
:func:`mcp_types.methods.validate_client_request` (whether the method exists at that
revision, and its params' shape). Results go out through
:func:`mcp_types.methods.serialize_server_result`, which checks them against the
revision's schema (``resultType``, ``ttlMs``, ``cacheScope``…). We do not use the SDK's
``Server``/ASGI transport itself: it runs its own handler registry on Starlette, while
this front-end answers both eras with one dispatcher on the gateway's aiohttp host
(its body reader, drain, metrics and invoker).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types import methods as schema
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from multidict import CIMultiDictProxy
from pydantic import ValidationError

from gateway.mcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    JsonRpcError,
    classify,
    valid_id,
)

log = logging.getLogger(__name__)

HEADER_MISMATCH = mcp_types.HEADER_MISMATCH
MODERN_VERSIONS: tuple[str, ...] = tuple(MODERN_PROTOCOL_VERSIONS)
#: Every revision served on ``/mcp``, as an UnsupportedProtocolVersionError names them.
ALL_VERSIONS: tuple[str, ...] = (*MODERN_VERSIONS, *reversed(SUPPORTED_VERSIONS))
#: How long a client may reuse a listing. Networks come and go only when the manifest
#: is reloaded, so a minute keeps hosts from listing before every call without hiding a
#: reload for long.
LIST_TTL_MS = 60_000
#: Results that carry ``ttlMs`` / ``cacheScope`` at 2026-07-28.
CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list"})
#: Headers that carry a credential: a listing answered to one may depend on it.
_CREDENTIAL_HEADERS = ("authorization", "x-api-key")


def is_modern(version_header: str | None) -> bool:
    """Whether a request with this ``MCP-Protocol-Version`` is served by the modern rules."""
    return version_header is not None and version_header.strip() in MODERN_VERSIONS


def carries_modern_meta(body: Any) -> bool:
    """Whether a body declares a modern revision in its ``_meta`` (the revision: "a request
    carrying modern per-request ``_meta`` is served statelessly"), whatever its headers say:
    a body without the ``MCP-Protocol-Version`` header is then refused as a header mismatch,
    not served as the handshake era."""
    params = body.get("params") if isinstance(body, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get(mcp_types.PROTOCOL_VERSION_META_KEY) in MODERN_VERSIONS


@dataclass(frozen=True, slots=True)
class ModernRequest:
    """A modern request that passed every check: what the dispatcher gets."""

    request_id: Any
    method: str
    params: dict[str, Any]
    version: str


def http_status(error: JsonRpcError) -> int:
    """The HTTP status of a JSON-RPC error at 2026-07-28: the error's own when it has one
    (401, 429, 503…), else the revision's table (400 for bad params, 404 for an unknown
    method), else 200."""
    if error.http_status != 200:
        return error.http_status
    return ERROR_CODE_HTTP_STATUS.get(error.code, 200)


def admit(body: Any, headers: CIMultiDictProxy[str]) -> ModernRequest | None:
    """The checked request, or None for a notification (answered 202 and dropped: this
    revision defines no client notification over HTTP; closing the stream cancels).
    ``headers``: the request's, every line kept (a routing header sent twice is refused).

    Raises :class:`JsonRpcError` (with its HTTP status) for what the revision refuses.
    """
    if not isinstance(body, dict):
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: the body must be one JSON-RPC request or notification",
                           http_status=400)
    kind, request_id = _classify(body)
    if kind == "notification":
        return None
    if kind != "request":  # clients must not post responses
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: a client must not post a JSON-RPC response",
                           http_status=400, request_id=request_id)
    duplicated = find_duplicated_routing_header(headers.items())
    if duplicated is not None:
        raise JsonRpcError(HEADER_MISMATCH, f"Header mismatch: {duplicated} appears more than once",
                           http_status=400, request_id=request_id)
    # The SDK reads only the routing headers, by lower-case name: the request's own
    # case-insensitive headers answer that as a lower-cased copy would (each routing
    # header is there at most once now), without building one per request.
    verdict = classify_inbound_request(body, headers=headers, supported_modern_versions=MODERN_VERSIONS)
    if isinstance(verdict, InboundLadderRejection):
        raise _rejection(verdict, request_id)
    method, params = body["method"], body.get("params") or {}
    try:
        schema.validate_client_request(method, verdict.protocol_version, params)
    except KeyError:
        raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found at {verdict.protocol_version}: {method}",
                           http_status=404, request_id=request_id) from None
    except ValidationError as error:
        raise JsonRpcError(INVALID_PARAMS, f"Invalid params for {method}: {_first_problem(error)}",
                           http_status=400, request_id=request_id) from None
    return ModernRequest(request_id, method, params, verdict.protocol_version)


def finish(request: ModernRequest, result: dict[str, Any], headers: Mapping[str, str],
           server_info: dict[str, Any]) -> dict[str, Any]:
    """The result as the revision wants it: ``resultType``, the cache hints on listings
    (``private`` when the caller sent a credential, since what it may see can depend on
    it), the server's identity in ``_meta``; checked against the revision's schema."""
    data = dict(result)
    data.setdefault("resultType", "complete")
    if request.method in CACHEABLE:
        data.setdefault("ttlMs", LIST_TTL_MS)
        data.setdefault("cacheScope", cache_scope(request.method, headers))
    meta = data.get("_meta")
    data["_meta"] = {**(meta if isinstance(meta, dict) else {}), mcp_types.SERVER_INFO_META_KEY: server_info}
    try:
        return schema.serialize_server_result(request.method, request.version, data)
    except (KeyError, ValidationError):
        # Our bug, not the client's; the details (which may echo the result) stay in the log.
        log.exception("MCP %s produced a result that %s does not allow", request.method, request.version)
        raise JsonRpcError(INTERNAL_ERROR, f"Internal error while answering {request.method}") from None


def cache_scope(method: str, headers: Mapping[str, str]) -> str:
    """``public`` for what every caller gets alike (discovery, the empty prompt and
    resource lists), ``private`` for a tool list answered to a credential (with API keys
    or OAuth, the tools depend on who asks)."""
    if method != "tools/list":
        return "public"
    lowered = {name.lower() for name in headers}
    return "private" if any(name in lowered for name in _CREDENTIAL_HEADERS) else "public"


def discover_result(instructions: str) -> dict[str, Any]:
    """``server/discover``'s result before :func:`finish` (which adds the server info)."""
    result = mcp_types.DiscoverResult(
        supported_versions=list(MODERN_VERSIONS),
        capabilities=mcp_types.ServerCapabilities(
            tools=mcp_types.ToolsCapability(list_changed=False),
            prompts=mcp_types.PromptsCapability(list_changed=False),
            resources=mcp_types.ResourcesCapability(subscribe=False, list_changed=False),
        ),
        instructions=instructions,
        result_type="complete",
        ttl_ms=LIST_TTL_MS,
        cache_scope="public",
    )
    data: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data


def unsupported_version(requested: str, request_id: Any = None) -> JsonRpcError:
    """-32022 naming every revision served here (both eras), as the revision's example does."""
    data = {"supported": list(ALL_VERSIONS), "requested": requested[:100]}
    return JsonRpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data=data,
                        http_status=400, request_id=request_id)


def _classify(body: dict[str, Any]) -> tuple[str, Any]:
    try:
        return classify(body)
    except JsonRpcError as error:
        error.http_status = 400
        raise


def _rejection(verdict: InboundLadderRejection, request_id: Any) -> JsonRpcError:
    if verdict.code == UNSUPPORTED_PROTOCOL_VERSION:
        requested = verdict.data.get("requested") if isinstance(verdict.data, dict) else None
        return unsupported_version(str(requested), request_id)
    return JsonRpcError(verdict.code, verdict.message, data=verdict.data,
                        http_status=ERROR_CODE_HTTP_STATUS.get(verdict.code, 400),
                        request_id=request_id if valid_id(request_id) else None)


def _first_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid"))
