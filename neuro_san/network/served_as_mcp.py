"""The manifest's ``mcp`` key and the MCP tool names of the networks it enables.

As in neuro-san 0.7: ``"x.hocon": true`` makes ``x`` an MCP tool; in a dict entry,
``mcp`` is off unless given, ``mcp: true|false`` switches it, and a dict
(``mcp: {name: calculator}``; ``enable`` defaults to true there) can also name the tool.
A tool's name is its network name with ``/`` → ``__`` and every other character outside
``[A-Za-z0-9_-]`` → ``_``, unless the manifest names it. When two networks claim one
name, the network whose name *is* that name keeps it, else the first in name order.

Stricter than neuro-san (see docs/compatibility.md): a malformed ``mcp`` value or an
explicit name that MCP clients would reject is an error of the entry, not a warning, and
``public: false`` stays private (neuro-san makes an MCP tool public).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: The tool names the MCP specification allows (2025-11-25, "Tool names").
VALID_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_OUTSIDE_DERIVED = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class McpSetting:
    """A manifest entry's ``mcp`` value, normalised."""

    enabled: bool = False
    #: The tool name given in the manifest, else None (derived from the network name).
    name: str | None = None


def parse_mcp_setting(value: Any) -> McpSetting:
    """Normalise an entry's ``mcp`` value; raises ValueError with the reason when bad."""
    if value is None:
        return McpSetting()
    if isinstance(value, bool):
        return McpSetting(enabled=value)
    if not isinstance(value, dict):
        raise ValueError(f"mcp must be true, false or a dict with enable/name, not {value!r}")
    unknown = set(value) - {"enable", "name"}
    if unknown:
        raise ValueError(f"mcp has unknown keys {sorted(unknown)}: only enable and name are used")
    enabled = value.get("enable", True)
    if not isinstance(enabled, bool):
        raise ValueError(f"mcp.enable must be true or false, not {enabled!r}")
    name = value.get("name")
    if name is not None and (not isinstance(name, str) or not VALID_TOOL_NAME.match(name)):
        raise ValueError(f"mcp.name must be 1-128 characters of A-Z a-z 0-9 _ - . (an MCP tool name), not {name!r}")
    return McpSetting(enabled=enabled, name=name)


def derived_tool_name(network: str) -> str:
    """``deep/math_guy`` → ``deep__math_guy``; idempotent."""
    return _OUTSIDE_DERIVED.sub("_", network.replace("/", "__"))[:128] or "_"


def tool_names(networks: Iterable[tuple[str, McpSetting]]) -> dict[str, str]:
    """Network name → its MCP tool name, for the enabled networks, collisions resolved.

    Every listed network reserves its own name (so a call by network name is never
    ambiguous); of two claims on one name, the network that *is* that name wins, else
    the first in sorted order. Losers are logged and left out.
    """
    listed = sorted(networks)
    claims: dict[str, str] = {}
    for network, setting in listed:
        if not setting.enabled:
            continue
        wanted = setting.name or derived_tool_name(network)
        holder = claims.get(wanted)
        if holder is None or (network == wanted and holder != wanted):
            if holder is not None:
                _log_collision(wanted, network, holder)
            claims[wanted] = network
        else:
            _log_collision(wanted, holder, network)
    reserved = {network for network, _ in listed}
    return {
        network: name
        for name, network in claims.items()
        if name == network or name not in reserved
    }


def _log_collision(name: str, keeper: str, loser: str) -> None:
    logger.warning(
        "MCP tool name %r is claimed by networks %r and %r; keeping it for %r. Give one a distinct "
        "name in the mcp settings of its manifest entry.", name, keeper, loser, keeper,
    )

