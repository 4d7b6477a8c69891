"""The MCP server: every public, MCP-enabled agent network as an MCP tool at ``/mcp``.

A front-end on the HTTP port (see :mod:`gateway.host.frontends`); it reaches agents only
through the agents facade (:mod:`gateway.agents`) over the gateway's invoker.
:func:`mcp_frontends` is what ``neuro-san serve`` and the standalone gateway pass to
``start_gateway``: empty when ``AGENT_MCP_ENABLE`` is not ``true``, and otherwise loaded on
the first ``/mcp`` request (:class:`gateway.host.frontends.LazyFrontEnd`), so start-up does
not import the MCP types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.host.errors import jsonrpc_refusal
from gateway.host.frontends import FrontEndFactory, RouteSpec, lazy_frontend
from gateway.mcp.switch import MCP_PATH, mcp_enabled

if TYPE_CHECKING:
    from gateway.mcp.frontend import McpFrontEnd

#: The methods :class:`~gateway.mcp.frontend.McpFrontEnd` serves (checked when it loads).
MCP_ROUTES = tuple(RouteSpec(method, MCP_PATH, "mcp", refusal=jsonrpc_refusal) for method in ("POST", "GET", "DELETE"))


def _load() -> FrontEndFactory:
    from gateway.mcp.frontend import McpFrontEnd

    return McpFrontEnd


def mcp_frontends(env: dict[str, str] | None = None) -> list[FrontEndFactory]:
    """The MCP front-end's factory, unless ``AGENT_MCP_ENABLE`` turns it off."""
    return [lazy_frontend("MCP", MCP_ROUTES, _load)] if mcp_enabled(env) else []


def __getattr__(name: str) -> Any:
    if name == "McpFrontEnd":
        from gateway.mcp.frontend import McpFrontEnd

        return McpFrontEnd
    raise AttributeError(name)


__all__ = ["MCP_PATH", "MCP_ROUTES", "McpFrontEnd", "mcp_enabled", "mcp_frontends"]
