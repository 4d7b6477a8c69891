"""The MCP server: every public, MCP-enabled agent network as an MCP tool at ``/mcp``.

A front-end on the HTTP port (see :mod:`gateway.frontends`); it reaches agents only
through the gateway's invoker. :func:`mcp_frontends` is what ``neuro-san serve`` and the
standalone gateway pass to ``start_gateway``: empty when ``AGENT_MCP_ENABLE`` is not
``true``.
"""

from __future__ import annotations

from gateway.frontends import FrontEndFactory
from mcp_frontend.frontend import MCP_PATH, McpFrontEnd, mcp_enabled


def mcp_frontends(env: dict[str, str] | None = None) -> list[FrontEndFactory]:
    """The MCP front-end's factory, unless ``AGENT_MCP_ENABLE`` turns it off."""
    return [McpFrontEnd] if mcp_enabled(env) else []


__all__ = ["MCP_PATH", "McpFrontEnd", "mcp_enabled", "mcp_frontends"]
