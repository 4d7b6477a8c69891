"""How a front-end asks ConciergeService/List for the networks that are MCP tools.

The MCP front-end reaches agents only through the invoker (gRPC or in-process), so it
learns which networks are MCP tools, and their tool names, from Concierge: with the
request metadata ``neuro-san-mcp-tools: true`` the answer holds only the MCP tools the
caller may see, each with one extra tag ``mcp_tool=<tool name>``. Without that metadata
the answer is exactly as before (wire-compatible with neuro-san).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from neuro_san.core.messages import AgentInfo

MCP_LISTING_METADATA_KEY = "neuro-san-mcp-tools"
MCP_TOOL_TAG_PREFIX = "mcp_tool="


def wants_mcp_listing(metadata: Iterable[tuple[str, object]]) -> bool:
    return any(key.lower() == MCP_LISTING_METADATA_KEY and str(value).lower() == "true" for key, value in metadata)


def mcp_listing(agents: Iterable[AgentInfo]) -> list[AgentInfo]:
    """The MCP tools among ``agents``, their tool name added as a tag."""
    return [
        replace(agent, tags=(*agent.tags, MCP_TOOL_TAG_PREFIX + agent.mcp_tool))
        for agent in agents
        if agent.mcp_tool is not None
    ]
