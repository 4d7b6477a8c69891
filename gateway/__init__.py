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

from gateway.config import GatewayConfig
from gateway.server import GatewayHandle, start_gateway

__all__ = ["GatewayConfig", "GatewayHandle", "start_gateway"]
