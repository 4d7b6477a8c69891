"""HTTP/JSON gateway for the gRPC API, generated at start-up from ``google.api.http``.

Laid out like grpc-gateway's runtime: :mod:`~gateway.host.pattern` (templates),
:mod:`~gateway.transcoder.routes` (rules from descriptors), :mod:`~gateway.host.mux` (404 vs 405),
:mod:`~gateway.transcoder.binder` (body → path → query), :mod:`~gateway.transcoder.marshal` (JSON ⇄ proto),
:mod:`~gateway.host.errors` (Status bodies), :mod:`~gateway.host.metadata` (headers ⇄ metadata,
Grpc-Timeout), :mod:`~gateway.transcoder.forward` (unary, NDJSON, SSE), :mod:`~gateway.invokers.channel`
(the shared channel), :mod:`~gateway.host.health`, :mod:`~gateway.transcoder.openapi`,
:mod:`~gateway.host.app` and :mod:`~gateway.host.server` (aiohttp app, start/stop),
:mod:`~gateway.cli`.
"""

from typing import TYPE_CHECKING, Any

from gateway.config import GatewayConfig

if TYPE_CHECKING:
    from gateway.host.server import GatewayHandle, start_gateway

__all__ = ["GatewayConfig", "GatewayHandle", "start_gateway"]


def __getattr__(name: str) -> Any:
    # The server (aiohttp, grpc, descriptors) loads on first use, so importing the
    # package for its CLI arguments or config stays cheap for client commands.
    if name in ("GatewayHandle", "start_gateway"):
        from gateway.host import server

        return getattr(server, name)
    raise AttributeError(name)
