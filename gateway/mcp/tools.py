"""Which networks are MCP tools for a caller, and how they are described.

Everything comes through the invoker: ConciergeService/List with the
``neuro-san-mcp-tools`` metadata answers the MCP tools the caller may see (each with an
``mcp_tool=<name>`` tag, see :mod:`neuro_san.core.mcp_listing`), and
AgentService/Function gives each one's description, as neuro-san uses it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types
from neuro_san.api.grpc import agent_pb2, concierge_pb2

from gateway.mcp.protocol import wire
from neuro_san.core.mcp_listing import MCP_LISTING_METADATA_KEY, MCP_TOOL_TAG_PREFIX

Metadata = Sequence[tuple[str, Any]]

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


class ToolCatalog:
    """Lists the caller's MCP tools through the invoker."""

    def __init__(self, concierge_list: Any, function: Any, timeout: float) -> None:
        self._list = concierge_list
        self._function = function
        self._timeout = timeout

    async def tools(self, metadata: Metadata) -> list[McpTool]:
        """The MCP tools the caller may use (raises the call's grpc error)."""
        reply = await self._list(
            concierge_pb2.ConciergeRequest(),
            metadata=[*metadata, (MCP_LISTING_METADATA_KEY, "true")],
            timeout=self._timeout,
        )
        found = []
        for agent in reply.agents:
            names = [tag[len(MCP_TOOL_TAG_PREFIX):] for tag in agent.tags if tag.startswith(MCP_TOOL_TAG_PREFIX)]
            if names:
                found.append(McpTool(name=names[-1], network=agent.agent_name))
        return found

    async def resolve(self, name: str, metadata: Metadata) -> McpTool | None:
        """The tool called ``name``: by tool name, or by network name (its ``title``),
        as neuro-san resolves it."""
        tools = await self.tools(metadata)
        for tool in tools:
            if tool.name == name:
                return tool
        for tool in tools:
            if tool.network == name:
                return tool
        return None

    async def describe(self, metadata: Metadata) -> list[dict[str, Any]]:
        """``tools/list``'s entries."""
        tools = await self.tools(metadata)
        descriptions = await asyncio.gather(*(self._description(tool, metadata) for tool in tools))
        entries = []
        for tool, description in zip(tools, descriptions, strict=True):
            entry = mcp_types.Tool(
                name=tool.name,
                # neuro-san's own MCP client finds a network's tool by this title.
                title=tool.network if tool.network != tool.name else None,
                description=description,
                input_schema=INPUT_SCHEMA,
                output_schema=OUTPUT_SCHEMA,
            )
            entries.append(wire(entry))
        return entries

    async def _description(self, tool: McpTool, metadata: Metadata) -> str:
        reply = await self._function(
            agent_pb2.FunctionRequest(), metadata=[*metadata, ("agent-name", tool.network)], timeout=self._timeout
        )
        return str(reply.function.description)
