"""What ``neuro-san serve`` needs to know about the MCP server before loading it: its path
and whether ``AGENT_MCP_ENABLE`` turns it on (importing the server itself pulls in the MCP
types, which is left to its first request)."""

from __future__ import annotations

import os

MCP_PATH = "/mcp"


def mcp_enabled(env: dict[str, str] | None = None) -> bool:
    """``AGENT_MCP_ENABLE``: on unless set to something other than ``true`` (as neuro-san)."""
    value = (os.environ if env is None else env).get("AGENT_MCP_ENABLE", "true")
    return value.strip().lower() == "true"
