"""MCP's JSON-RPC envelope: versions, error codes, and building messages.

Shapes come from the official SDK's ``mcp_types`` models (dumped by alias, without
``None`` fields), so what we send is what the SDK's clients validate against.
"""

from __future__ import annotations

from typing import Any

import mcp_types
from pydantic import BaseModel

#: The revisions negotiated through ``initialize``, oldest first (Streamable HTTP began
#: with 2025-03-26). The sessionless 2026-07-28 is served beside them by
#: :mod:`gateway.mcp.modern`.
SUPPORTED_VERSIONS: tuple[str, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
#: What a request without ``MCP-Protocol-Version`` is taken to speak (the spec's rule).
DEFAULT_VERSION = "2025-03-26"
#: The last revision that allowed JSON-RPC batches (2025-06-18 removed them).
BATCHING_VERSIONS = frozenset({"2025-03-26"})

PARSE_ERROR = mcp_types.PARSE_ERROR
INVALID_REQUEST = mcp_types.INVALID_REQUEST
METHOD_NOT_FOUND = mcp_types.METHOD_NOT_FOUND
INVALID_PARAMS = mcp_types.INVALID_PARAMS
INTERNAL_ERROR = mcp_types.INTERNAL_ERROR
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: Implementation-defined codes (-32000..-32019).
UNAUTHENTICATED = -32001
SERVER_BUSY = -32002
#: MCP's own code for resources/read of an unknown URI (the same number as SERVER_BUSY).
RESOURCE_NOT_FOUND = -32002
FORBIDDEN = -32003  # HTTP 403: an OAuth token without the scope the call needs
REQUEST_CANCELLED = -32800  # as LSP; the client has stopped waiting by then


class JsonRpcError(Exception):
    """A request that ends in a JSON-RPC error (and the HTTP status to send it with)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: Any = None,
        http_status: int = 200,
        request_id: Any = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        #: HTTP headers to send with it (``Retry-After`` of a refusal).
        self.headers = headers or []
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status
        #: The id of the request it answers, when known (else JSON-RPC's null).
        self.request_id = request_id

    def envelope(self, request_id: Any = None) -> dict[str, Any]:
        return error_envelope(self.request_id if request_id is None else request_id, self.code, self.message, self.data)


def negotiate(requested: Any) -> str:
    """The revision to answer an ``initialize`` with: the client's if served, else our latest."""
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


def wire(model: BaseModel) -> dict[str, Any]:
    """An SDK model as it goes on the wire."""
    data: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    data.pop("resultType", None)  # 2026-07-28's field: gateway.mcp.modern.finish sets it there
    return data


def result_envelope(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_envelope(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def valid_id(value: Any) -> bool:
    """JSON-RPC ids MCP allows: a string or an integer (not bool, not null, not a float)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(message: Any) -> tuple[str, Any]:
    """("request", id) / ("notification", None) / ("response", id); raises JsonRpcError
    (INVALID_REQUEST) for anything else, with the id when one can be read."""
    if not isinstance(message, dict):
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be an object")
    raw_id = message.get("id")
    usable_id = raw_id if valid_id(raw_id) else None
    if message.get("jsonrpc") != "2.0":
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id=usable_id)
    if "method" not in message:
        if "result" in message or "error" in message:
            return "response", usable_id  # a client's answer to a server request: we send none
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "method" is missing', request_id=usable_id)
    if not isinstance(message["method"], str):
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "method" must be a string', request_id=usable_id)
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "params" must be an object', request_id=usable_id)
    if "id" not in message:
        return "notification", None
    if usable_id is None:
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    return "request", usable_id
