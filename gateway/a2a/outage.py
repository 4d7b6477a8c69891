"""An A2A call that needs the shared task store (Redis) while it is away: one exception, one answer.

With ``AGENT_REDIS_URL`` the tasks, their events, push configurations and contextIds live in
Redis. Every binding asks at the start of a call whether Redis answers; Redis may still go
away during the call (a read or a save times out, or is refused). Whichever store meets it
raises :class:`StoreUnavailable` (it is an A2A ``InternalError`` for the a2a-sdk, so its
handlers pass it on as their own errors, and a :class:`~gateway.state.StateUnavailable` for
our code), the request handler notes it in the call's state (:func:`noting_outages`), and
each binding answers as at the start of a call, from :meth:`StoreUnavailable.failure`:

- JSON-RPC: HTTP 503, ``Retry-After``, error -32603 with the message;
- HTTP+JSON: HTTP 503, ``Retry-After``, ``{"error": {"code": 14, "status": "UNAVAILABLE", ...}}``;
- gRPC: ``UNAVAILABLE`` with the message and a ``retry-after`` trailer.

A stream that has started cannot change its HTTP status: JSON-RPC's SSE ends with an
``error`` event (-32603, the message, ErrorInfo reason ``STATE_UNAVAILABLE``), HTTP+JSON's
with an ``error`` event in the SDK's shape (``{"error": {"code": 503, "status":
"UNAVAILABLE", ...}}``), gRPC with status ``UNAVAILABLE``.

The state logs the outage once (a WARNING, and another when Redis is back); the SDK's own
reports of each call it failed (tracebacks, ERROR lines) are dropped (:func:`quiet_sdk_reports`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

from a2a.server.context import ServerCallContext
from a2a.utils import errors as sdk_errors
from a2a.utils.errors import ErrorMapping, InternalError

from gateway.host.errors import RpcFailure
from gateway.state import StateUnavailable
from neuro_san.core.errors import Code

if TYPE_CHECKING:
    from gateway.state.redis_state import RedisState  # imports redis: only with AGENT_REDIS_URL

T = TypeVar("T")

STATE_UNAVAILABLE = "the shared task store (Redis) is unreachable; retry later"
#: Seconds a client is told to wait (Redis restarts in about that).
RETRY_AFTER = "5"
#: The ErrorInfo reason in the bodies the SDK builds.
REASON = "STATE_UNAVAILABLE"
#: JSON-RPC has no "unavailable": internal error; the HTTP status and Retry-After say the rest.
JSONRPC_CODE = -32603
#: Call-state key: a list where the request handler notes the outage a call met.
OUTAGE_KEY = "neuro_san.outage"


class StoreUnavailable(InternalError, StateUnavailable):
    """The shared task store went away during an A2A call; ``message`` is what the caller reads."""

    def __init__(self, message: str = STATE_UNAVAILABLE) -> None:
        super().__init__(message=message)

    def failure(self) -> RpcFailure:
        """The answer in the project's error vocabulary: UNAVAILABLE, so 503 by the one table."""
        return RpcFailure(int(Code.UNAVAILABLE), self.message, retry_after=RETRY_AFTER)


# The SDK's error tables are keyed by exact class and are its only extension point: this entry
# makes the bodies it builds for StoreUnavailable (an HTTP+JSON stream's error event, ErrorInfo
# details on every binding) say UNAVAILABLE and STATE_UNAVAILABLE instead of 500 / UNKNOWN_ERROR.
sdk_errors.A2A_ERROR_MAPPING[StoreUnavailable] = ErrorMapping(503, "UNAVAILABLE", REASON)
sdk_errors.A2A_ERROR_REASONS[StoreUnavailable] = REASON


async def guarded(state: RedisState, call: Awaitable[T]) -> T:
    """Await a Redis call of an A2A store; Redis away is :class:`StoreUnavailable`."""
    try:
        return await state.guard(call)
    except StateUnavailable:
        raise StoreUnavailable() from None


def met(state: Mapping[str, Any]) -> StoreUnavailable | None:
    """The outage this call met (noted by the request handler), if any."""
    noted = state.get(OUTAGE_KEY)
    return noted[-1] if isinstance(noted, list) and noted else None


def _note(context: ServerCallContext, error: StoreUnavailable) -> None:
    noted = context.state.get(OUTAGE_KEY)
    if isinstance(noted, list):
        noted.append(error)


Answer = tuple[int, dict[str, Any], dict[str, str]]


def jsonrpc_answer(request_id: Any, error: StoreUnavailable | None = None) -> Answer:
    """(HTTP status, body, headers) of the JSON-RPC answer."""
    failure = (error or StoreUnavailable()).failure()
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": JSONRPC_CODE, "message": failure.message}}
    return failure.http_status, body, dict(failure.headers())


def rest_answer(error: StoreUnavailable | None = None) -> Answer:
    """(HTTP status, body, headers) of the HTTP+JSON answer: a Status with its code's name."""
    failure = (error or StoreUnavailable()).failure()
    body = {"error": {"code": failure.code, "status": Code(failure.code).name, "message": failure.message,
                      "details": failure.details}}
    return failure.http_status, body, dict(failure.headers())


_UNARY = ("on_message_send", "on_get_task", "on_list_tasks", "on_cancel_task",
          "on_create_task_push_notification_config", "on_get_task_push_notification_config",
          "on_list_task_push_notification_configs", "on_delete_task_push_notification_config")
_STREAMS = ("on_message_send_stream", "on_subscribe_to_task")


def _unary(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def noting(self: Any, params: Any, context: ServerCallContext) -> Any:
        try:
            return await method(self, params, context)
        except StoreUnavailable as error:
            _note(context, error)
            raise

    return noting


def _stream(method: Callable[..., AsyncGenerator[Any, None]]) -> Callable[..., AsyncGenerator[Any, None]]:
    @functools.wraps(method)
    async def noting(self: Any, params: Any, context: ServerCallContext) -> AsyncGenerator[Any, None]:
        try:
            async with aclosing(method(self, params, context)) as events:
                async for event in events:
                    yield event
        except StoreUnavailable as error:
            _note(context, error)
            raise

    return noting


def noting_outages(cls: type[T]) -> type[T]:
    """A request handler class whose methods note a :class:`StoreUnavailable` in the call's
    state before passing it on: every binding's dispatcher calls them, whichever store (task,
    events, push configurations, contexts) met the outage, and the dispatchers turn the error
    into their own bodies, which the front-end then answers as above while nothing is sent."""
    for name in _UNARY:
        setattr(cls, name, _unary(getattr(cls, name)))
    for name in _STREAMS:
        setattr(cls, name, _stream(getattr(cls, name)))
    return cls


class _DropOutageReports(logging.Filter):
    """Drops a record about a :class:`StoreUnavailable`: its traceback, or its message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], StoreUnavailable):
            return False
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(arg, str) and arg.startswith(STATE_UNAVAILABLE) for arg in args)


#: Where the a2a-sdk reports each call a store error failed (its consumer and producer, its
#: HTTP dispatchers), and asyncio, which reports the SDK's consumer task that ended on one.
_REPORTING_LOGGERS = ("a2a.server.agent_execution.active_task", "a2a.utils.error_handlers",
                      "a2a.server.routes.rest_dispatcher", "a2a.server.routes.jsonrpc_dispatcher", "asyncio")
_FILTER = _DropOutageReports()


def quiet_sdk_reports() -> None:
    """One WARNING per outage (the state's), not a traceback per call (idempotent)."""
    for name in _REPORTING_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
