"""HTTP/JSON gateway for the gRPC API, generated at start-up from ``google.api.http``.

Laid out like grpc-gateway's runtime: :mod:`~gateway.pattern` (templates),
:mod:`~gateway.routes` (rules from descriptors), :mod:`~gateway.mux` (404 vs 405),
:mod:`~gateway.binder` (body → path → query), :mod:`~gateway.marshal` (JSON ⇄ proto),
:mod:`~gateway.errors` (Status bodies), :mod:`~gateway.metadata` (headers ⇄ metadata,
Grpc-Timeout), :mod:`~gateway.forward` (unary, NDJSON, SSE), :mod:`~gateway.invoker`
(the shared channel), :mod:`~gateway.health`, :mod:`~gateway.openapi`,
:mod:`~gateway.app` and :mod:`~gateway.server` (aiohttp app, start/stop),
:mod:`~gateway.cli`.
"""

from typing import TYPE_CHECKING, Any

from gateway.config import GatewayConfig

if TYPE_CHECKING:
    from gateway.server import GatewayHandle, start_gateway

__all__ = ["GatewayConfig", "GatewayHandle", "start_gateway"]


def __getattr__(name: str) -> Any:
    # The server (aiohttp, grpc, descriptors) loads on first use, so importing the
    # package for its CLI arguments or config stays cheap for client commands.
    if name in ("GatewayHandle", "start_gateway"):
        from gateway import server

        return getattr(server, name)
    raise AttributeError(name)
