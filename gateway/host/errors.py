"""Errors stay gRPC statuses until the exit, where the HTTP status is picked once.

The body of every error is the seed's ``Status``:
``{"code": <grpc code>, "message": "...", "details": [<Any as JSON>...]}``, ``details``
always present. The HTTP status comes from ``neuro_san.core.errors.http_status`` (the
one table) unless the gateway itself needs a more precise one (404 no route, 405,
413, 415), which :class:`GatewayError` carries as ``http_status``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import grpc
from aiohttp import web
from google.protobuf import any_pb2, json_format
from google.rpc import error_details_pb2, status_pb2

from gateway.host.responses import dumps, json_response
from neuro_san.core.errors import JSONRPC_CODE_BY_HTTP_STATUS, REFUSAL_REASONS, Code, http_status

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
# error_details_pb2 is imported for its side effect too: the google.rpc detail types
# are then in the default pool, so their Any details render as JSON, not base64.


class GatewayError(Exception):
    """An error the gateway answers without (or instead of) a gRPC call."""

    def __init__(
        self,
        code: Code,
        message: str,
        *,
        status: int | None = None,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = status if status is not None else http_status(code)
        self.details = details or []
        self.headers = headers or {}

    def status_dict(self) -> dict[str, Any]:
        return {"code": int(self.code), "message": self.message, "details": self.details}


def bad_request(message: str, field: str, description: str | None = None) -> GatewayError:
    """400 INVALID_ARGUMENT with a google.rpc.BadRequest detail naming the field."""
    violation = {"field": field, "description": description or message}
    detail = {"@type": _BAD_REQUEST_TYPE, "field_violations": [violation]}
    return GatewayError(Code.INVALID_ARGUMENT, message, details=[detail])


@dataclass(frozen=True, slots=True)
class RpcFailure:
    """A failed call as every HTTP-side transport sees it (REST, MCP, A2A): one reading of
    the status, its ErrorInfo reason and the ``retry-after`` trailer, one HTTP status."""

    code: int
    message: str
    details: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    #: Whole seconds, as the service sent them in the ``retry-after`` trailer.
    retry_after: str | None = None
    #: The call's trailing metadata as it came (its rich status among it), for a gRPC
    #: servicer that passes the service's answer on unchanged (A2A's gRPC binding).
    trailers: tuple[tuple[str, str | bytes], ...] = field(default=(), compare=False, repr=False)

    @property
    def http_status(self) -> int:
        # The reason matters too: a server at its concurrency cap is 503, not 429.
        return http_status(self.code, self.reason)

    @property
    def is_refusal(self) -> bool:
        """The call was refused for a while (caller limits, server busy or draining), not
        failed by the network: JSON-RPC front-ends answer it as a request error."""
        return self.reason in REFUSAL_REASONS

    @property
    def jsonrpc_code(self) -> int:
        return JSONRPC_CODE_BY_HTTP_STATUS.get(self.http_status, -32603)

    def headers(self) -> list[tuple[str, str]]:
        return [("Retry-After", self.retry_after)] if self.retry_after else []

    def status_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}

    def jsonrpc_data(self) -> dict[str, Any]:
        """The ``error.data`` of a JSON-RPC refusal: what REST clients get as the body."""
        data: dict[str, Any] = {"http_status": self.http_status, "reason": self.reason, **self.status_dict()}
        if self.retry_after:
            data["retry_after_seconds"] = int(self.retry_after) if self.retry_after.isdigit() else self.retry_after
        return data


def rpc_failure(error: grpc.aio.AioRpcError) -> RpcFailure:
    """The failure of a call, details decoded when present."""
    details: list[dict[str, Any]] = []
    reason: str | None = None
    retry_after: str | None = None
    for key, value in error.trailing_metadata() or ():
        if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
            details, reason = _decode_details(value)
        elif key == "retry-after" and isinstance(value, str):  # a rate limit says when to retry
            retry_after = value
    trailers = tuple((str(key), value) for key, value in error.trailing_metadata() or ())
    return RpcFailure(error.code().value[0], error.details() or "", details, reason, retry_after, trailers)


def status_from_rpc_error(error: grpc.aio.AioRpcError) -> tuple[int, dict[str, Any]]:
    """(HTTP status, Status dict) for a failed call, details decoded when present."""
    failure = rpc_failure(error)
    return failure.http_status, failure.status_dict()


def _decode_details(raw: bytes) -> tuple[list[dict[str, Any]], str | None]:
    try:
        status = status_pb2.Status.FromString(raw)
    except Exception:  # noqa: BLE001 - a broken detail must not turn into a 500
        return [], None
    reason = None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
    return [any_to_dict(detail) for detail in status.details], reason


def any_to_dict(detail: any_pb2.Any) -> dict[str, Any]:
    """An Any as JSON; a type the pool does not know becomes ``{"@type", "value"}``."""
    try:
        rendered: dict[str, Any] = json_format.MessageToDict(
            detail, preserving_proto_field_name=True
        )
        return rendered
    except (TypeError, KeyError, json_format.Error):
        return {
            "@type": detail.type_url,
            "value": base64.b64encode(detail.value).decode("ascii"),
        }


def encode_status(status: dict[str, Any]) -> bytes:
    return json.dumps(status, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


#: JSON-RPC's "Invalid Request": a refusal of a client error (413, 408…) has no code of its own.
_JSONRPC_INVALID_REQUEST = -32600


def status_refusal(error: GatewayError) -> web.Response:
    """A refusal as the REST routes answer it: the HTTP status and a Status body."""
    return json_response(error.http_status, encode_status(error.status_dict()), list(error.headers.items()))


def jsonrpc_refusal(error: GatewayError) -> web.Response:
    """A refusal as JSON-RPC front-ends (MCP, A2A) answer it: the same HTTP status and
    headers, the body a JSON-RPC error (-32002 busy/draining, -32029 rate limited, else
    Invalid Request) whose ``data`` is the Status REST clients would get."""
    code = JSONRPC_CODE_BY_HTTP_STATUS.get(error.http_status, _JSONRPC_INVALID_REQUEST)
    envelope = {
        "jsonrpc": "2.0", "id": None,
        "error": {"code": code, "message": error.message, "data": {"http_status": error.http_status,
                                                                      **error.status_dict()}},
    }
    return json_response(error.http_status, dumps(envelope), list(error.headers.items()))
