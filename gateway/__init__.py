"""The HTTP port: one house with rooms.

- :mod:`gateway.host`: the aiohttp server, TLS, the connection guard, the one guarded
  body reader, health, metrics, error bodies, the route table and the front-end seam;
- :mod:`gateway.transcoder`: the REST API generated from ``google.api.http`` rules;
- :mod:`gateway.invokers`: how the HTTP port reaches the service (gRPC channel or
  in-process);
- the front-ends :mod:`gateway.mcp`, :mod:`gateway.a2a`, :mod:`gateway.playground`;
- :mod:`gateway.composition`: the one list of front-ends, and :func:`start_gateway`;
- :mod:`gateway.cli`: ``neuro-san gateway`` (standalone, in front of gRPC replicas).
"""

from typing import TYPE_CHECKING, Any

from gateway.host.config import GatewayConfig

if TYPE_CHECKING:
    from gateway.composition import start_gateway
    from gateway.host.server import GatewayHandle

__all__ = ["GatewayConfig", "GatewayHandle", "start_gateway"]


def __getattr__(name: str) -> Any:
    # The server (aiohttp, grpc, descriptors) loads on first use, so importing the
    # package for its CLI arguments or config stays cheap for client commands.
    if name == "start_gateway":
        from gateway import composition

        return composition.start_gateway
    if name == "GatewayHandle":
        from gateway.host import server

        return server.GatewayHandle
    raise AttributeError(name)
