"""The error model of every layer, and the one table that maps it to each transport.

Who has to act decides the class::

    NeuroSanError                      code (gRPC numbering), http_status
    ├── RequestError                   the client: fix the request
    │   ├── InvalidRequest             INVALID_ARGUMENT  400
    │   ├── AgentNotFound              NOT_FOUND         404
    │   ├── Unauthenticated            UNAUTHENTICATED   401
    │   │   └── InvalidToken           (an OAuth access token refused)
    │   └── PermissionDenied           PERMISSION_DENIED 403
    │       └── InsufficientScope      (an OAuth token's scopes do not cover the call)
    ├── CapacityError                  try again later
    │   ├── Overloaded                 RESOURCE_EXHAUSTED 429 (503 over HTTP, see below)
    │   └── Draining                   UNAVAILABLE       503
    ├── RunError                       a chat turn failed while running
    │   ├── LimitExceeded              RESOURCE_EXHAUSTED (max_iterations …)
    │   ├── RequestTimeout             DEADLINE_EXCEEDED (max_execution_seconds …)
    │   ├── UpstreamUnavailable        UNAVAILABLE (an LLM or external agent)
    │   └── ToolFailure                INTERNAL
    └── ConfigurationError             INVALID_ARGUMENT: the agent network is broken

The codes are google.rpc.Code numbers, so the core needs no gRPC import; the gRPC
service aborts with ``error.code`` and the gateway picks the HTTP status from
``HTTP_STATUS`` once, at its exit.
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    """google.rpc.Code (the same numbers as grpc.StatusCode)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


#: The standard gRPC → HTTP status table (grpc-gateway, Envoy, Connect and
#: google/rpc/code.proto agree on it). FAILED_PRECONDITION is 400, not 412, on purpose.
HTTP_STATUS: dict[Code, int] = {
    Code.OK: 200,
    Code.CANCELLED: 499,
    Code.UNKNOWN: 500,
    Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504,
    Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409,
    Code.PERMISSION_DENIED: 403,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409,
    Code.OUT_OF_RANGE: 400,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503,
    Code.DATA_LOSS: 500,
    Code.UNAUTHENTICATED: 401,
}


#: Where a reason deserves another HTTP status than its code's: a server at its
#: concurrency cap answers 503, as neuro-san does, so load balancers retry elsewhere.
HTTP_STATUS_BY_REASON: dict[str, int] = {"TOO_MANY_REQUESTS": 503}


#: Reasons that refuse a call for a while, before (or instead of) running it: every
#: transport answers them as a refusal of the request (its HTTP status, ``Retry-After``
#: when known), never as a failure of the agent network. A server at its concurrency cap
#: or draining is 503; a caller over its own rate limit or token budget is 429.
REFUSAL_REASONS = frozenset({"TOO_MANY_REQUESTS", "DRAINING", "RATE_LIMITED", "TOKEN_BUDGET_EXHAUSTED"})

#: JSON-RPC error codes (implementation-defined range) of refusals, for the JSON-RPC
#: front-ends (MCP, A2A), by the HTTP status the one table above gives them.
JSONRPC_CODE_BY_HTTP_STATUS: dict[int, int] = {429: -32029, 503: -32002}


def http_status(code: int, reason: str | None = None) -> int:
    """HTTP status for a gRPC code (and ErrorInfo reason, when known); unknown codes are 500."""
    if reason is not None and reason in HTTP_STATUS_BY_REASON:
        return HTTP_STATUS_BY_REASON[reason]
    try:
        return HTTP_STATUS[Code(code)]
    except ValueError:
        return 500


#: The most characters of one client-supplied value an error message repeats.
ECHO_LIMIT = 200


def clip(value: object, limit: int = ECHO_LIMIT) -> str:
    """A client-supplied ``value`` as an error message may repeat it: cut to ``limit``
    characters, with an ellipsis and the full length. A client's 7,000-character agent name or
    tenant, echoed whole (twice: message and details), made a ~14 kB gRPC trailer the client
    refused (RESOURCE_EXHAUSTED); every transport's messages use this (or :func:`echo`)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """``value`` quoted (as ``repr``) and cut as :func:`clip` cuts it."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


class NeuroSanError(Exception):
    """Base of all our errors. ``message`` is safe to show to the client."""

    code: Code = Code.INTERNAL
    #: A stable, machine-readable reason (google.rpc.ErrorInfo.reason).
    reason: str = "INTERNAL"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RequestError(NeuroSanError):
    code = Code.INVALID_ARGUMENT
    reason = "INVALID_REQUEST"


class InvalidRequest(RequestError):
    """The request is malformed. ``field`` names the offending field when known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class AgentNotFound(RequestError):
    code = Code.NOT_FOUND
    reason = "AGENT_NOT_FOUND"

    def __init__(self, agent_name: str) -> None:
        super().__init__(f"agent {echo(agent_name)} is not served here")
        self.agent_name = agent_name


class Unauthenticated(RequestError):
    code = Code.UNAUTHENTICATED
    reason = "UNAUTHENTICATED"


class PermissionDenied(RequestError):
    code = Code.PERMISSION_DENIED
    reason = "PERMISSION_DENIED"


class InvalidToken(Unauthenticated):
    """An OAuth access token that is not valid here (signature, issuer, audience, expiry):
    HTTP answers it with ``WWW-Authenticate: Bearer error="invalid_token"``."""

    reason = "INVALID_TOKEN"


class InsufficientScope(PermissionDenied):
    """An OAuth access token whose scopes do not cover the call: HTTP answers it with
    ``WWW-Authenticate: Bearer error="insufficient_scope", scope="<scope>"``."""

    reason = "INSUFFICIENT_SCOPE"

    def __init__(self, message: str, scope: str) -> None:
        super().__init__(message)
        self.scope = scope


class CapacityError(NeuroSanError):
    code = Code.UNAVAILABLE
    reason = "UNAVAILABLE"


class Overloaded(CapacityError):
    code = Code.RESOURCE_EXHAUSTED
    reason = "TOO_MANY_REQUESTS"


class Draining(CapacityError):
    code = Code.UNAVAILABLE
    reason = "DRAINING"


class RunError(NeuroSanError):
    code = Code.INTERNAL
    reason = "RUN_FAILED"


class LimitExceeded(RunError):
    code = Code.RESOURCE_EXHAUSTED
    reason = "LIMIT_EXCEEDED"


class RequestTimeout(RunError):
    code = Code.DEADLINE_EXCEEDED
    reason = "TIMEOUT"


class UpstreamUnavailable(RunError):
    """An LLM provider or an external agent could not be reached or failed."""

    code = Code.UNAVAILABLE
    reason = "UPSTREAM_UNAVAILABLE"


class ToolFailure(RunError):
    code = Code.INTERNAL
    reason = "TOOL_FAILED"


class ConfigurationError(NeuroSanError):
    """An agent network (or its llm_config, or a coded tool) is broken."""

    code = Code.INVALID_ARGUMENT
    reason = "BAD_AGENT_NETWORK"


def redis_missing_message(settings: str) -> str:
    """One wording for every setting that needs the ``redis`` extra when it is not installed."""
    return f"{settings} is set but the redis package is not installed: pip install 'neuro-san-grpc[redis]'"
