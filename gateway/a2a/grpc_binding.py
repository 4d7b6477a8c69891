"""A2A's gRPC binding on the gRPC port: ``lf.a2a.v1.A2AService``, each request's network
named by its ``tenant``.

``neuro-san serve`` (with HTTP on) makes one :class:`A2AGrpcBinding`, registers it on the
gRPC server before the server starts (``AgentServer.add_generic_handlers``: the service
layer knows neither the gateway nor the A2A SDK) and hands it to the HTTP port's
composition (``protocol_frontends(a2a_grpc=...)``). Both bindings then share **one** A2A
front-end (:class:`gateway.a2a.frontend.A2AFrontEnd`): one request handler, task store,
executor and push sender. So a task sent over gRPC is read over JSON-RPC or HTTP+JSON, the
agents are reached through the same agents facade with the caller's metadata (authentication,
limits and the private-network rule as on HTTP), and the cards list the gRPC interface.

Like the HTTP routes (:class:`gateway.host.frontends.LazyFrontEnd`), the binding imports no
SDK before its first call: it serves the service's methods as raw bytes, and the first call
loads the front-end and :mod:`gateway.a2a.grpc_servicer` (which parses and answers) in a
worker thread. Not served: by the standalone gateway (``neuro-san gateway``), which has no
gRPC port, nor by ``neuro-san serve --no-http`` (the cards that advertise the binding and
the front-end it shares are the HTTP port's); there a call is UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Protocol

import grpc

from gateway.a2a.routes import A2A_ROUTES
from gateway.host.frontends import FrontEnd, FrontEndContext, FrontEndFactory, FrontEndRoute, LazyFrontEnd

if TYPE_CHECKING:
    from gateway.a2a.frontend import A2AFrontEnd

log = logging.getLogger(__name__)

SERVICE = "lf.a2a.v1.A2AService"
#: The service's methods (``a2a.types.a2a_pb2``; tests/gateway/a2a/test_a2a_grpc.py checks
#: these against the SDK's descriptor), by their response kind.
UNARY_METHODS = frozenset({
    "SendMessage", "GetTask", "ListTasks", "CancelTask", "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "GetExtendedAgentCard",
    "DeleteTaskPushNotificationConfig",
})
STREAMING_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask"})
STARTING = "A2A over gRPC is not ready yet (the HTTP port is starting): retry"


class GrpcServicer(Protocol):
    """What :mod:`gateway.a2a.grpc_servicer` offers: each method on serialised messages."""

    async def unary(self, method: str, raw: bytes, context: grpc.aio.ServicerContext) -> bytes: ...

    def stream(self, method: str, raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]: ...


class A2AGrpcBinding(grpc.GenericRpcHandler):
    """The gRPC server's handler for ``lf.a2a.v1.A2AService``, and the owner of the one A2A
    front-end of the process (built by whichever binding is called first, closed with the
    HTTP port)."""

    def __init__(self) -> None:
        #: The gRPC port, for the cards' gRPC interface: set once the server listens.
        self.port = 0
        self._context: FrontEndContext | None = None
        self._frontend: A2AFrontEnd | None = None
        self._servicer: GrpcServicer | None = None
        # Each method's handler, made once: grpc asks for one on every call, and the server's
        # interceptor (service/request_deadline.py) wraps a handler once and reuses the
        # wrapping while it sees the same handler object. No serialisers: requests come as
        # bytes, answers go as bytes (the SDK loads later).
        self._handlers: dict[str, grpc.RpcMethodHandler] = {
            **{f"/{SERVICE}/{method}": grpc.unary_unary_rpc_method_handler(functools.partial(self._unary, method))
               for method in UNARY_METHODS},
            **{f"/{SERVICE}/{method}": grpc.unary_stream_rpc_method_handler(functools.partial(self._stream, method))
               for method in STREAMING_METHODS},
        }

    # The gRPC side -------------------------------------------------------------------

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method  # type: ignore[attr-defined]
        return self._handlers.get(method if isinstance(method, str) else str(method))

    async def _unary(self, method: str, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        servicer = await self._loaded(context)
        return await servicer.unary(method, raw, context)

    async def _stream(self, method: str, raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        servicer = await self._loaded(context)
        async for item in servicer.stream(method, raw, context):
            yield item

    async def _loaded(self, context: grpc.aio.ServicerContext) -> GrpcServicer:
        if self._servicer is None:
            if self._context is None:  # the gRPC port listens a moment before the HTTP port
                await context.abort(grpc.StatusCode.UNAVAILABLE, STARTING)
            started = time.perf_counter()
            make = await asyncio.to_thread(_load_servicer)
            if self._servicer is None:  # another first call may have finished meanwhile
                assert self._context is not None
                self._servicer = make(self.frontend(self._context))
                log.info("A2A gRPC binding loaded on its first call (%.0f ms)", 1000 * (time.perf_counter() - started))
        return self._servicer

    # The HTTP side -------------------------------------------------------------------

    def frontends(self) -> list[FrontEndFactory]:
        """The HTTP port's A2A front-end (its routes loaded on the first request, as
        without gRPC), sharing this binding's front-end."""

        def factory(context: FrontEndContext) -> FrontEnd:
            self._context = context
            return _Shared(self, LazyFrontEnd(context, "A2A", A2A_ROUTES, self._load_frontend))

        return [factory]

    def _load_frontend(self) -> FrontEndFactory:
        """Run in a worker thread by the HTTP side's first request: import the SDK."""
        import gateway.a2a.frontend  # noqa: F401 - the A2A SDK: loaded on first use

        return self.frontend

    def frontend(self, context: FrontEndContext) -> A2AFrontEnd:
        """The one A2A front-end of the process (its module already imported)."""
        if self._frontend is None:
            from gateway.a2a.frontend import A2AFrontEnd  # imported by the caller, off the event loop

            self._frontend = A2AFrontEnd(context, grpc_port=self.port)
        return self._frontend

    async def close(self) -> None:
        """Close the shared front-end: called when the HTTP port stops, after the gRPC
        server has stopped (``neuro-san serve`` stops gRPC first)."""
        frontend, self._frontend, self._servicer = self._frontend, None, None
        if frontend is not None:
            await frontend.close()


class _Shared:
    """The HTTP port's A2A front-end, whose closing closes the shared front-end once."""

    def __init__(self, binding: A2AGrpcBinding, lazy: LazyFrontEnd) -> None:
        self._binding = binding
        self._lazy = lazy

    def routes(self) -> Iterable[FrontEndRoute]:
        return self._lazy.routes()

    async def close(self) -> None:
        await self._binding.close()


def _load_servicer() -> Callable[[A2AFrontEnd], GrpcServicer]:
    """Run in a worker thread: import the SDK (and the front-end) for the gRPC side."""
    import gateway.a2a.frontend  # noqa: F401 - the A2A SDK: loaded on first use
    from gateway.a2a.grpc_servicer import TenantGrpcServicer

    return TenantGrpcServicer
