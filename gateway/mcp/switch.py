"""What ``neuro-san serve`` needs to know about the MCP server before loading it: its path
and whether ``AGENT_MCP_ENABLE`` turns it on (importing the server itself pulls in the MCP
types, which is left to its first request)."""

from __future__ import annotations

from neuro_san.core.env_settings import env_flag
from neuro_san.settings import process_env

MCP_PATH = "/mcp"


def mcp_enabled(env: dict[str, str] | None = None) -> bool:
    """``AGENT_MCP_ENABLE``: on unless switched off; a value that is not a switch is refused
    at start (neuro-san reads anything but ``true`` as off, so a typo hid /mcp silently)."""
    return env_flag(process_env() if env is None else env, "AGENT_MCP_ENABLE", True)
