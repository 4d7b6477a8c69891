"""The seam between the HTTP port and the service: :class:`Invoker`.

Every front-end (REST, MCP, A2A, the playground) calls agents only through an invoker,
so authentication, admission, rate limits, request ids, metrics and logs are the service
layer's, the same for every front-end and for gRPC. An invoker hands out one callable per
gRPC method (:class:`RpcMethod`), each behaving as a ``grpc.aio`` multicallable:
``call(request, metadata=..., timeout=...)``, awaited when unary, iterated when streaming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass


class RpcMethod(Protocol):
    """What an invoker needs to know of a method (a REST route is one, structurally)."""

    @property
    def grpc_path(self) -> str: ...

    @property
    def request_class(self) -> type[Message]: ...

    @property
    def response_class(self) -> type[Message]: ...

    @property
    def server_streaming(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class MethodRef:
    """One gRPC method, as read from its descriptor."""

    grpc_path: str
    request_class: type[Message]
    response_class: type[Message]
    server_streaming: bool


def methods_of(services: Iterable[ServiceDescriptor]) -> dict[str, MethodRef]:
    """Every method of ``services``, by gRPC path (``/pkg.Service/Method``)."""
    found: dict[str, MethodRef] = {}
    for service in services:
        for method in service.methods:
            path = f"/{service.full_name}/{method.name}"
            found[path] = MethodRef(
                path, GetMessageClass(method.input_type), GetMessageClass(method.output_type),
                method.server_streaming,
            )
    return found


class Invoker:
    """One callable per method, health, close.

    :class:`gateway.invokers.channel.GrpcInvoker` calls over a gRPC channel (the standalone
    gateway); :class:`gateway.invokers.inprocess.InProcessInvoker` calls the service layer
    in the same process (``neuro-san serve``).
    """

    def callable_for(self, method: RpcMethod) -> Callable[..., Any]:
        """The multicallable of ``method`` (built once per method by its user)."""
        raise NotImplementedError

    async def health(self, service: str, deadline: float) -> int:
        """The serving status of ``service`` (``""``: the whole server); raises AioRpcError."""
        raise NotImplementedError

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the calls in flight to end (a graceful stop)."""

    async def close(self) -> None:
        """Release what the invoker holds."""
