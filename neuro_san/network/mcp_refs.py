"""MCP servers named in an agent's ``tools`` list, as neuro-san 0.7.15 reads them.

Two shapes: a URL string that *looks like* an MCP server, or a dict
``{"url": …, "tools": [allow-list]}`` (every dict is MCP). A string is MCP when its
scheme is http(s), it has a host and no ``#fragment``, and ``mcp`` is one of its host
labels or path segments (case-insensitive); any other URL is a neuro-san agent.

Where neuro-san accepts a bad dict silently (no ``url``, allow-list entries that are not
strings, other keys) this server refuses it at load, with the key path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: The dict keys neuro-san reads; anything else would be silently ignored there.
MCP_DICT_KEYS = frozenset({"url", "tools"})


@dataclass(frozen=True, slots=True)
class McpServerRef:
    """One MCP server in an agent's ``tools`` list."""

    url: str
    #: The dict's ``tools`` allow-list; None when not given (string form, or no key).
    allowed: tuple[str, ...] | None = None
    #: Index in the ``tools`` list as written (tools keep their written order).
    position: int = 0
    #: True for the string form, which Connectivity lists (the dict form it leaves out).
    listed: bool = True


def is_mcp_url(tool: str) -> bool:
    """neuro-san's test for a ``tools`` string that names an MCP server."""
    try:
        parts = urlsplit(tool)
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.fragment:
        return False
    labels = parts.hostname.lower().split(".")
    segments = [s.lower() for s in parts.path.split("/") if s]
    return "mcp" in labels or "mcp" in segments


def mcp_url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be an MCP server URL, or None when it can."""
    if not isinstance(url, str) or not url.strip():
        return f"must be the MCP server's http(s) URL, not {url!r}"
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as error:
        return f"{url!r} is not a valid URL: {error}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"{url!r}: MCP servers are reached over streamable HTTP; use an http:// or https:// URL"
    if not parts.hostname:
        return f"{url!r} has no host"
    return None


def parse_mcp_dict(raw: dict[str, Any], position: int) -> tuple[McpServerRef | None, str, str]:
    """``(ref, "", "")`` for a good dict entry, else ``(None, sub-key, reason)``."""
    unknown = sorted(str(k) for k in raw if k not in MCP_DICT_KEYS)
    if unknown:
        return None, "", f"an MCP server entry takes only 'url' and 'tools', not {', '.join(unknown)}"
    if "url" not in raw:
        return None, "", "an MCP server entry needs 'url' (the server's http(s) URL)"
    problem = mcp_url_problem(raw["url"])
    if problem:
        return None, ".url", problem
    allowed = raw.get("tools")
    if allowed is not None:
        if not isinstance(allowed, list):
            return None, ".tools", f"must be a list of MCP tool names, not {type(allowed).__name__}"
        for index, name in enumerate(allowed):
            if not isinstance(name, str) or not name.strip():
                return None, f".tools[{index}]", f"must be an MCP tool name, not {name!r}"
    # Both as written: headers are looked up by the exact URL string, as in neuro-san.
    url = raw["url"]
    names = tuple(allowed) if allowed else None
    return McpServerRef(url, names, position, listed=False), "", ""
