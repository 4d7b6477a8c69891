"""The server's method handlers, gathered once so two callers can serve them.

The gRPC server serves them over the wire; inside ``neuro-san serve`` the gateway's
in-process invoker calls the same handlers directly. Generated ``add_*_to_server``
functions register into a :class:`HandlerSet` as into a server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grpc


class HandlerSet:
    """Records what generated code registers on a server; replays it onto a real one."""

    def __init__(self) -> None:
        self.generic: list[grpc.GenericRpcHandler] = []
        self.registered: list[tuple[str, Mapping[str, grpc.RpcMethodHandler]]] = []

    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler]) -> None:
        self.registered.append((service, handlers))

    def install(self, server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers(self.generic)
        for service, handlers in self.registered:
            server.add_registered_method_handlers(service, handlers)  # type: ignore[attr-defined]
