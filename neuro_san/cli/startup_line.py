"""The one line ``neuro-san serve`` prints for people: the URLs to open.

The ``READY grpc=… http=… metrics=…`` line stays as it is for machines; this one is
for the newcomer who just typed ``make run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.host.server import GatewayHandle


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):
        return "127.0.0.1"  # listening everywhere: loopback is one address that works
    return f"[{host}]" if ":" in host else host


def mounted_paths(gateway: GatewayHandle) -> set[str]:
    """Templates of every front-end route the gateway serves (e.g. ``/``, ``/mcp``)."""
    return {route.template for frontend in gateway.host.frontends for route in frontend.routes()}


def urls_line(host: str, grpc_port: int, gateway: GatewayHandle | None, playground: bool) -> str:
    """``neuro-san: playground http://… · REST http://…/api/v1/ · gRPC host:port[ · MCP …]``."""
    name = _url_host(host)
    parts: list[str] = []
    if gateway is not None:
        base = f"{gateway.scheme}://{name}:{gateway.port}"
        paths = mounted_paths(gateway)
        if playground and "/" in paths:
            parts.append(f"playground {base}/")
        parts.append(f"REST {base}/api/v1/")
    parts.append(f"gRPC {name}:{grpc_port}")
    if gateway is not None and any(path == "/mcp" or path.startswith("/mcp/") for path in mounted_paths(gateway)):
        parts.append(f"MCP {gateway.scheme}://{name}:{gateway.port}/mcp")
    return "neuro-san: " + " · ".join(parts)
