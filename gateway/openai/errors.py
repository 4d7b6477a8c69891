"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.

The OpenAI SDKs pick their exception class by the HTTP status (400 ``BadRequestError``,
401 ``AuthenticationError``, 403 ``PermissionDeniedError``, 404 ``NotFoundError``, 429
``RateLimitError``, 5xx ``InternalServerError``) and retry 429 and 5xx, honouring
``Retry-After``; so the status is the service's (``RpcFailure.http_status``, the one
table), the body says it in OpenAI's words, and a refusal the host decides (draining, a
body too large or too slow, a ``Host`` not allowed) reads the same (:func:`openai_refusal`).
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from gateway.agents.interface import AgentsFailed, ChatFailed
from gateway.host.errors import GatewayError, RpcFailure
from gateway.host.responses import dumps, json_response
from neuro_san.core.errors import Code, clip, echo

log = logging.getLogger(__name__)

#: OpenAI's error ``type`` by HTTP status (what its own API answers).
_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "invalid_request_error", 408: "timeout", 413: "invalid_request_error", 415: "invalid_request_error",
    421: "invalid_request_error", 429: "rate_limit_error", 503: "server_error", 504: "timeout",
}
#: A machine-readable ``code`` by HTTP status, where OpenAI's clients look for one.
_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded", 503: "service_unavailable", 504: "timeout"}


class OpenAiError(Exception):
    """A failure answered as OpenAI answers it; ``headers`` (``Retry-After``) go out too."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code if code is not None else _CODES.get(status)
        self.headers = headers or []

    def body(self) -> dict[str, Any]:
        kind = _TYPES.get(self.status, "server_error" if self.status >= 500 else "invalid_request_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}

    def response(self) -> web.Response:
        return json_response(self.status, dumps(self.body()), self.headers)


def invalid(message: str, param: str | None = None, code: str | None = None) -> OpenAiError:
    """A 400 naming the parameter at fault."""
    return OpenAiError(400, message, param=param, code=code)


def model_not_found(model: str) -> OpenAiError:
    return OpenAiError(404, f"The model {echo(model)} does not exist or you do not have access to it.",
                       param="model", code="model_not_found")


def from_failure(failure: RpcFailure, model: str | None = None) -> OpenAiError:
    """The service's failure of a call about ``model``: NOT_FOUND of a network is
    ``model_not_found`` naming it; the rest keep the service's status and message."""
    if failure.code == Code.NOT_FOUND and model is not None:
        return model_not_found(model)
    status = failure.http_status
    code = failure.reason.lower() if failure.reason and status not in _CODES else None
    return OpenAiError(status, failure.message or "the call failed", code=code, headers=failure.headers())


def from_chat_failed(event: ChatFailed, model: str) -> OpenAiError:
    return from_failure(event.failure, model)


def from_agents_failed(error: AgentsFailed, model: str | None = None) -> OpenAiError:
    return from_failure(error.failure, model)


def openai_refusal(error: GatewayError) -> web.Response:
    """A refusal the host decides on an OpenAI route, in OpenAI's shape (same status and headers)."""
    return OpenAiError(error.http_status, error.message, headers=list(error.headers.items())).response()


def answered(request: web.Request, error: OpenAiError) -> web.Response:
    """``error`` as the response, and its one log line (a client's mistake is no traceback)."""
    level = logging.WARNING if error.status >= 500 else logging.INFO
    log.log(level, "OpenAI API %s %s: %d %s", request.method, clip(request.path), error.status, error.message)
    return error.response()
