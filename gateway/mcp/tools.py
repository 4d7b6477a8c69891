"""Which networks are MCP tools for a caller, and how they are described.

Everything comes from the agents facade's directory (:meth:`gateway.agents.interface.Agents.listing`):
one service call lists the networks the caller may see, each with its MCP tool name (when
the manifest makes it one) and its front man's function, whose description is the tool's.

The catalog keeps each caller's last listing (by a digest of its credentials, never the
credentials) for :data:`LISTING_TTL_SECONDS`, so that ``tools/call`` in the steady state is
one service call, the chat, whose own access check stands (a key that lost a network is
refused by it). Every ``tools/list`` (and ``initialize``) refreshes it; so does a name it
does not know, and a cached network that answers "not served here" (refreshed once).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types

from gateway.agents.interface import Agents, AgentsFailed, Caller
from gateway.mcp.protocol import wire
from neuro_san.core.errors import Code

Metadata = Sequence[tuple[str, Any]]

#: How long a caller's listing answers ``tools/call`` without asking again. Networks come and
#: go only when the manifest is reloaded; a listing older than this is asked for again.
LISTING_TTL_SECONDS = 30.0
#: Callers whose listing is kept (the least recently used is dropped first).
MAX_CALLERS = 1024
#: The metadata a listing depends on: the caller's credentials.
_CREDENTIALS = ("authorization", "x-api-key")

#: What ``tools/call`` accepts: neuro-san's ChatRequest fields, inline (no ``$ref``).
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "user_message": {
            "type": "object",
            "description": "The user's turn: {\"text\": \"...\"}.",
            "properties": {
                "text": {"type": "string", "description": "What the user says to the agent network."},
            },
            "required": ["text"],
        },
        "sly_data": {
            "type": "object",
            "description": "Private data for the network's coded tools; never shown to its LLMs.",
        },
        "chat_context": {
            "type": "object",
            "description": "structuredContent.chat_context of an earlier call, to continue that conversation.",
        },
        "chat_filter": {
            "type": "object",
            "properties": {"chat_filter_type": {"type": "string", "enum": ["UNKNOWN", "MINIMAL", "MAXIMAL"]}},
        },
    },
    "required": ["user_message"],
    "additionalProperties": False,
}

#: What ``structuredContent`` holds on success.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "structure": {"type": "object", "description": "The answer's JSON structure, when it has one."},
        "sly_data": {"type": "object", "description": "sly_data the network lets back to its caller."},
        "chat_context": {"type": "object", "description": "Send back as arguments.chat_context to continue."},
    },
    "required": ["chat_context"],
}


@dataclass(frozen=True, slots=True)
class McpTool:
    """One network served as an MCP tool."""

    name: str
    network: str
    #: The front man's function description (the tool's description).
    description: str = ""


@dataclass(frozen=True, slots=True)
class _Kept:
    tools: tuple[McpTool, ...]
    at: float


def caller_key(metadata: Metadata) -> str:
    """Who the listing was for: a digest of the credentials, so none is kept in memory."""
    parts = [f"{key}\0".encode() + (value if isinstance(value, bytes) else str(value).encode()) + b"\0"
             for key, value in metadata if key in _CREDENTIALS]
    # A caller without credentials (no API keys, no OAuth) has the digest of nothing,
    # made once: a new sha256 per call was most of this function's ~1.8 µs.
    return hashlib.sha256(b"".join(parts)).hexdigest() if parts else _NO_CREDENTIALS


_NO_CREDENTIALS = hashlib.sha256().hexdigest()


class ToolCatalog:
    """The caller's MCP tools, from the agents facade's directory, kept a short while."""

    def __init__(self, agents: Agents, ttl_seconds: float = LISTING_TTL_SECONDS) -> None:
        self._agents = agents
        self._ttl = ttl_seconds
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    async def tools(self, metadata: Metadata) -> list[McpTool]:
        """The MCP tools the caller may use, asked now (raises :class:`AgentsFailed`)."""
        listing = await self._agents.listing(Caller(metadata))
        tools = tuple(McpTool(agent.mcp_tool, agent.name, agent.function.description if agent.function else "")
                      for agent in listing.agents if agent.mcp_tool is not None)
        key = caller_key(metadata)
        self._kept[key] = _Kept(tools, time.monotonic())
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_CALLERS:
            self._kept.popitem(last=False)
        return list(tools)

    async def resolve(self, name: str, metadata: Metadata, *, fresh: bool = False) -> tuple[McpTool | None, bool]:
        """The tool called ``name`` (by tool name, or by network name: its ``title``, as
        neuro-san resolves it) and whether it came from the kept listing (no call made).
        A name the kept listing lacks, or ``fresh``, asks the service again."""
        kept = None if fresh else self._kept.get(caller_key(metadata))
        if kept is not None and time.monotonic() - kept.at < self._ttl:
            found = _named(name, kept.tools)
            if found is not None:
                return found, True
        return _named(name, await self.tools(metadata)), False

    async def check_callable(self, name: str, metadata: Metadata) -> None:
        """Raise the service's refusal when ``name`` is a network the caller may not call
        (PERMISSION_DENIED: a key or token that does not cover it); any other answer,
        not found included, is left to the caller ("Unknown tool")."""
        try:
            await self._agents.describe(name, Caller(metadata))
        except AgentsFailed as error:
            if error.code == Code.PERMISSION_DENIED:
                raise

    async def describe(self, metadata: Metadata) -> list[dict[str, Any]]:
        """``tools/list``'s entries (one service call)."""
        entries = []
        for tool in await self.tools(metadata):
            entry = mcp_types.Tool(
                name=tool.name,
                # neuro-san's own MCP client finds a network's tool by this title.
                title=tool.network if tool.network != tool.name else None,
                description=tool.description,
                input_schema=INPUT_SCHEMA,
                output_schema=OUTPUT_SCHEMA,
            )
            entries.append(wire(entry))
        return entries


def _named(name: str, tools: Sequence[McpTool]) -> McpTool | None:
    for tool in tools:
        if tool.name == name:
            return tool
    for tool in tools:
        if tool.network == name:
            return tool
    return None
