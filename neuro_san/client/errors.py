"""What a client call can raise: the server's status, as one exception per kind.

Each class also derives from the matching class of :mod:`neuro_san.core.errors`, so
code that already catches the core tree (``except AgentNotFound``) catches these too::

    ClientError                       code        also a core…
    ├── AgentNotFound                 NOT_FOUND, UNIMPLEMENTED (per-agent route), HTTP 404
    ├── InvalidRequest                INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
    ├── Unauthenticated               UNAUTHENTICATED
    ├── PermissionDenied              PERMISSION_DENIED
    ├── Unavailable                   UNAVAILABLE: server unreachable, draining, upstream down
    ├── ResourceExhausted             RESOURCE_EXHAUSTED: over capacity or a run limit
    ├── DeadlineExceeded              DEADLINE_EXCEEDED: the client's or the server's deadline
    ├── Cancelled                     CANCELLED
    └── ServerError                   INTERNAL, UNKNOWN and everything else

``message`` is the server's own message (or, when the server could not be reached,
what went wrong locally); ``code`` the gRPC code the server sent; ``details`` the
``google.rpc.Status`` details when the transport carried them (as JSON-like dicts).
"""

from __future__ import annotations

from typing import Any

from neuro_san.core import errors as core
from neuro_san.core.errors import Code


class ClientError(core.NeuroSanError):
    """A call failed; ``code`` is the status the server (or the transport) reported."""

    code = Code.UNKNOWN

    def __init__(
        self,
        message: str,
        code: Code | int | None = None,
        details: list[dict[str, Any]] | None = None,
        agent: str | None = None,
    ) -> None:
        core.NeuroSanError.__init__(self, message)
        # By default the code of the kind (Unavailable → UNAVAILABLE …).
        self.code = type(self).code if code is None else _as_code(code)
        self.details = details or []
        self.agent = agent
        #: The ``ErrorInfo.reason`` of the details when the server sent one, else the code's name.
        self.reason = _reason(self.details) or self.code.name

    def __str__(self) -> str:
        return self.message

    @property
    def failed_upstream(self) -> str | None:
        """``"llm"`` when the server answered but its LLM provider failed, ``"network"`` when a
        network it called failed (both arrive as UNAVAILABLE, like a server that is down), else None."""
        if self.reason.startswith("LLM_"):
            return "llm"
        if self.reason == "UPSTREAM_UNAVAILABLE":
            return "network"
        return None


class AgentNotFound(ClientError, core.AgentNotFound):
    code = Code.NOT_FOUND

    def __init__(
        self, message: str, code: Code | int | None = None, details: Any = None, agent: str | None = None
    ) -> None:
        super().__init__(message, code, details, agent)
        self.agent_name = agent or ""


class InvalidRequest(ClientError, core.InvalidRequest):
    code = Code.INVALID_ARGUMENT

    def __init__(
        self, message: str, code: Code | int | None = None, details: Any = None, agent: str | None = None
    ) -> None:
        super().__init__(message, code, details, agent)
        self.field = _violated_field(self.details)


class Unauthenticated(ClientError, core.Unauthenticated):
    code = Code.UNAUTHENTICATED


class PermissionDenied(ClientError, core.PermissionDenied):
    code = Code.PERMISSION_DENIED


class Unavailable(ClientError, core.CapacityError):
    code = Code.UNAVAILABLE


class ResourceExhausted(ClientError, core.Overloaded):
    code = Code.RESOURCE_EXHAUSTED


class DeadlineExceeded(ClientError, core.RequestTimeout):
    code = Code.DEADLINE_EXCEEDED


class Cancelled(ClientError):
    code = Code.CANCELLED


class ServerError(ClientError, core.RunError):
    code = Code.INTERNAL


_BY_CODE: dict[Code, type[ClientError]] = {
    Code.NOT_FOUND: AgentNotFound,
    Code.UNIMPLEMENTED: AgentNotFound,  # the per-agent route's answer for an unknown agent
    Code.INVALID_ARGUMENT: InvalidRequest,
    Code.FAILED_PRECONDITION: InvalidRequest,
    Code.OUT_OF_RANGE: InvalidRequest,
    Code.UNAUTHENTICATED: Unauthenticated,
    Code.PERMISSION_DENIED: PermissionDenied,
    Code.UNAVAILABLE: Unavailable,
    Code.RESOURCE_EXHAUSTED: ResourceExhausted,
    Code.DEADLINE_EXCEEDED: DeadlineExceeded,
    Code.CANCELLED: Cancelled,
}

#: HTTP statuses without a JSON Status body (a proxy's page, an old server's empty 404).
_CODE_BY_HTTP_STATUS: dict[int, Code] = {
    400: Code.INVALID_ARGUMENT,
    401: Code.UNAUTHENTICATED,
    403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND,
    405: Code.UNIMPLEMENTED,
    409: Code.ABORTED,
    413: Code.RESOURCE_EXHAUSTED,
    429: Code.RESOURCE_EXHAUSTED,
    499: Code.CANCELLED,
    501: Code.UNIMPLEMENTED,
    502: Code.UNAVAILABLE,
    503: Code.UNAVAILABLE,
    504: Code.DEADLINE_EXCEEDED,
}


def error_for(
    code: Code | int, message: str, details: list[dict[str, Any]] | None = None, agent: str | None = None
) -> ClientError:
    """The exception for a status ``code`` with the server's ``message``."""
    kind = _BY_CODE.get(_as_code(code), ServerError)
    return kind(message, code, details, agent)


def code_for_http_status(status: int) -> Code:
    return _CODE_BY_HTTP_STATUS.get(status, Code.INTERNAL if status >= 500 else Code.UNKNOWN)


def _as_code(code: Code | int) -> Code:
    try:
        return Code(int(code))
    except ValueError:
        return Code.UNKNOWN


def _reason(details: list[dict[str, Any]]) -> str | None:
    for detail in details:
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str):
            return str(detail["reason"])
    return None


def _violated_field(details: list[dict[str, Any]]) -> str | None:
    for detail in details:
        for violation in detail.get("field_violations", ()) if isinstance(detail, dict) else ():
            if isinstance(violation, dict) and isinstance(violation.get("field"), str):
                return str(violation["field"])
    return None
