"""The in-process invoker: the gateway calls the service layer directly, no gRPC hop.

Inside ``neuro-san serve`` the gateway and the gRPC server share a process. Rather than
serialising every request and response through a channel and a socket to itself, this
invoker hands the request message to the very method handlers the gRPC server serves
(the ``grpc.GenericRpcHandler``\\ s it was given), each call in a task of its own with a
:class:`gateway.invokers.local_call.LocalContext`. Everything else stays where it was: the service
layer authenticates, admits, logs, traces and counts the call from its metadata exactly
as for a gRPC call; the gateway maps statuses, headers and streams exactly as before.

``drain(grace)`` is the gRPC server's graceful stop for these calls: new calls fail with
UNAVAILABLE, calls in flight get ``grace`` seconds, then are cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import grpc
from grpc_health.v1 import health_pb2

from gateway.invokers.interface import Invoker, RpcMethod
from gateway.invokers.local_call import LocalContext, LocalStreamCall, LocalUnaryCall, MetadataPairs, size_error

log = logging.getLogger(__name__)


class _CallDetails(NamedTuple):
    """``grpc.HandlerCallDetails`` as a generic handler reads it."""

    method: str
    invocation_metadata: MetadataPairs


class _HealthCheck:
    """What ``grpc_health``'s aio servicer offers the invoker."""

    async def Check(self, request: Any, context: Any) -> Any:  # noqa: N802 - grpc's name
        ...


class InProcessInvoker(Invoker):
    """Calls the handlers of a gRPC server that runs in this process, without the wire."""

    def __init__(
        self,
        handlers: Sequence[grpc.GenericRpcHandler],
        health: _HealthCheck,
        max_message_bytes: int,
    ) -> None:
        self._handlers = tuple(handlers)
        self._health = health
        self._limit = max_message_bytes
        self._active: set[LocalUnaryCall | LocalStreamCall] = set()
        self._draining = False

    def _method_handler(self, path: str) -> grpc.RpcMethodHandler | None:
        details = _CallDetails(path, ())
        for handler in self._handlers:
            found = handler.service(details)  # type: ignore[arg-type]
            if found is not None:
                return found
        return None

    def callable_for(self, method: RpcMethod) -> Callable[..., Any]:
        handler = self._method_handler(method.grpc_path)
        path = method.grpc_path
        streaming = method.server_streaming

        def call(request: Any, *, metadata: MetadataPairs | None = None, timeout: float | None = None,
                 **_ignored: Any) -> LocalUnaryCall | LocalStreamCall:  # fmt: skip
            return self._start(path, handler, streaming, request, metadata or (), timeout)

        return call

    def _start(
        self,
        path: str,
        handler: grpc.RpcMethodHandler | None,
        streaming: bool,
        request: Any,
        metadata: MetadataPairs,
        timeout: float | None,
    ) -> LocalUnaryCall | LocalStreamCall:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        context = LocalContext(metadata, deadline, loop)
        behaviour = _behaviour(handler, streaming)
        size = request.ByteSize()
        if self._draining:
            behaviour = _failing(grpc.StatusCode.UNAVAILABLE, "the server is shutting down", streaming)
        elif behaviour is None:
            behaviour = _failing(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {path}", streaming)
        elif size > self._limit:
            behaviour = _failing(*size_error(size, self._limit, sending=True), streaming)
        kind = LocalStreamCall if streaming else LocalUnaryCall
        call = kind(behaviour, request, context, timeout, self._limit)
        self._active.add(call)
        call.add_done_callback(self._active.discard)
        return call

    async def health(self, service: str, deadline: float) -> int:
        loop = asyncio.get_running_loop()
        context = LocalContext((), loop.time() + deadline, loop)
        call = LocalUnaryCall(
            self._health.Check, health_pb2.HealthCheckRequest(service=service), context, deadline, self._limit
        )
        response = await call
        return int(response.status)

    async def drain(self, grace: float) -> None:
        """Refuse new calls; wait up to ``grace`` seconds for those in flight, then cancel them."""
        self._draining = True
        if not self._active:
            return
        waiters = [asyncio.ensure_future(call.code()) for call in list(self._active)]
        _done, pending = await asyncio.wait(waiters, timeout=grace)
        if pending:
            log.info("cancelling %d in-process calls still running after %.0f s", len(pending), grace)
        for call in list(self._active):
            call.shut_down()
        for waiter in pending:
            waiter.cancel()

    async def close(self) -> None:
        for call in list(self._active):
            call.cancel()


def _behaviour(handler: grpc.RpcMethodHandler | None, streaming: bool) -> Callable[..., Any] | None:
    if handler is None:
        return None
    if streaming:
        return handler.unary_stream  # type: ignore[no-any-return]
    return handler.unary_unary  # type: ignore[no-any-return]


def _failing(code: grpc.StatusCode, details: str, streaming: bool = False) -> Callable[..., Any]:
    """A handler that fails the call at once with ``code`` (what the server would answer)."""

    async def fail(_request: Any, context: LocalContext) -> Any:
        await context.abort(code, details)

    async def fail_stream(_request: Any, context: LocalContext) -> Any:
        await context.abort(code, details)
        yield  # pragma: no cover - makes this an async generator

    return fail_stream if streaming else fail
