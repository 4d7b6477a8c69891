"""MCP tools: the tools of an MCP server named in an agent's ``tools`` list.

The model sees each server tool by its provider-safe name (``/`` → ``__``, anything
outside ``[A-Za-z0-9_-]`` → ``_``), with the server's description and ``inputSchema``
unchanged; the server is called with the original name and the model's arguments
only (never sly_data). As in neuro-san, the stream shows ``Received arguments:`` and
``Got result:`` for each call, an allow-list entry that matches nothing, a name already
taken and an unreachable server each become an AGENT message (before the HUMAN one),
and the request goes on without those tools.

Results: the text content, plus the ``structuredContent`` when the text does not
already carry it (neuro-san drops it); ``isError`` gives ``Error: ToolException: …``
and a failed transport ``Error: <cause>``, as neuro-san words them.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neuro_san.core.messages import MessageType, OriginPath, origin_str
from neuro_san.llm.interface import ToolSpec
from neuro_san.network.mcp_refs import McpServerRef
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.mcp_servers_info import McpServersInfo

if TYPE_CHECKING:
    from mcp import types

    from neuro_san.runtime.context import RequestContext
    from neuro_san.runtime.mcp_sessions import McpSessions

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_tool_name(name: str) -> str:
    """neuro-san's provider-safe tool name (idempotent)."""
    return _UNSAFE.sub("_", name.replace("/", "__"))


class McpClients:
    """What MCP tools share across requests: the session pool and the info file."""

    def __init__(self, info: McpServersInfo | None = None, sessions: McpSessions | None = None) -> None:
        self.info = info or McpServersInfo()
        self._sessions = sessions

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> McpClients:
        return cls(McpServersInfo.from_env(env))

    @property
    def sessions(self) -> McpSessions:
        if self._sessions is None:
            # The SDK takes seconds to import: a server whose networks use no MCP never loads it.
            from neuro_san.runtime.mcp_sessions import McpSessions

            self._sessions = McpSessions()
        return self._sessions

    async def aclose(self) -> None:
        if self._sessions is not None:
            await self._sessions.aclose()


def select_tools(
    tools: list[types.Tool], allowed: tuple[str, ...] | None
) -> tuple[list[types.Tool], list[str]]:
    """The server's tools the allow-list lets through (server order), and the entries
    that matched nothing. An entry matches the original or the safe name, or both after
    making them safe; an exact spelling wins when a server offers both."""
    if not allowed:
        return list(tools), []
    chosen: set[str] = set()
    missing: list[str] = []
    for entry in allowed:
        exact = [t.name for t in tools if t.name == entry]
        safe = [t.name for t in tools if safe_tool_name(t.name) == entry]
        loose = [t.name for t in tools if safe_tool_name(entry) == safe_tool_name(t.name)]
        match = exact[:1] or safe[:1] or loose[:1]
        if match:
            chosen.add(match[0])
        else:
            missing.append(entry)
    return [t for t in tools if t.name in chosen], missing


def result_text(result: types.CallToolResult) -> str:
    """What the model gets for an MCP result."""
    from mcp import types  # loaded already: the result came through the SDK

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            parts.append(block.resource.text)
        else:  # images, audio, links: the model gets their description, not the bytes
            parts.append(json.dumps(block.model_dump(mode="json", exclude={"data", "blob"}, exclude_none=True)))
    text = "\n".join(parts)
    structured = result.structured_content
    if structured is not None and not _carries(text, structured):
        rendered = json.dumps(structured, ensure_ascii=False)
        text = f"{text}\n{rendered}" if text else rendered
    if result.is_error:
        return f"Error: ToolException: {text}"
    return text


def _carries(text: str, structured: Any) -> bool:
    """Whether ``text`` already says what ``structured`` does: the same JSON, or the
    ``{"result": …}`` wrapper FastMCP (MCPServer in SDK 2.x) puts around a plain return value."""
    candidates = [structured]
    if isinstance(structured, dict) and list(structured) == ["result"]:
        candidates.append(structured["result"])
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    return any(c == parsed or c == text for c in candidates)


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of an MCP server."""

    spec: ToolSpec
    server_name: str
    url: str
    clients: McpClients
    kind: str = "mcp_tool"
    remote: bool = True

    @property
    def ref(self) -> str:
        return self.spec.name

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        shown = {
            **arguments,
            "origin": [{"tool": o.tool, "instantiation_index": o.instantiation_index} for o in origin],
            "origin_str": origin_str(origin),
        }
        ctx.emit(MessageType.AGENT, origin, "Received arguments:", structure={"tool_start": True, "tool_args": shown})
        from neuro_san.runtime.mcp_sessions import describe_error  # the SDK is loaded by now

        headers = self.clients.info.headers(self.url, ctx.sly_data)
        try:
            result = await self.clients.sessions.call_tool(self.url, headers, self.server_name, dict(arguments))
            text = result_text(result)
        except Exception as error:  # the model is told, and carries on (cancellation still propagates)
            log.info("MCP tool %s failed: %s", self.server_name, type(error).__name__)
            text = f"Error: {describe_error(error)}"
        ctx.emit(MessageType.AGENT, origin, "Got result:", structure={"tool_end": True, "tool_output": text})
        return text


async def bind_mcp_server(
    ctx: RequestContext, agent: AgentSpec, origin: OriginPath, server: McpServerRef, clients: McpClients
) -> list[McpTool]:
    """The tools ``server`` offers ``agent``; problems are told on the stream, and an
    unreachable server gives no tools."""
    where = f"agent '{agent.name}' of agent network '{ctx.network.name}'"
    headers = clients.info.headers(server.url, ctx.sly_data)
    sessions = clients.sessions  # loads the SDK on first use
    # Lazy: the MCP SDK, loaded by the line above on first use.
    from neuro_san.runtime.mcp_sessions import describe_error

    try:
        listed = await sessions.list_tools(server.url, headers)
    except Exception as error:  # any failure to list leaves the server out, as in neuro-san
        detail = describe_error(error)
        log.warning("%s: MCP server unreachable: %s", where, type(error).__name__)
        ctx.emit(
            MessageType.AGENT,
            origin,
            f"{where}: the URL {server.url} was unreachable. Not including it as a tool.\n{detail}\n",
        )
        return []
    allowed = server.allowed if server.allowed is not None else clients.info.tools(server.url)
    chosen, missing = select_tools([t for t in listed if t.name], allowed)
    if missing:
        ctx.emit(MessageType.AGENT, origin, f"{where}: the following tools cannot be found in {server.url}: {missing}")
    tools: list[McpTool] = []
    seen: set[str] = set()
    for tool in chosen:
        name = safe_tool_name(tool.name)
        if name in seen:
            log.warning("%s: MCP tool %r from %s has a duplicate name; skipped", where, tool.name, server.url)
            continue
        seen.add(name)
        if name != tool.name:
            log.info(
                "tool %r renamed to %r for LLM tool-name compatibility; the server is still called "
                "with the original name.", tool.name, name,
            )
        spec = ToolSpec(name, tool.description or "", dict(tool.input_schema))
        tools.append(McpTool(spec, tool.name, server.url, clients))
    return tools


def collision_notice(ctx: RequestContext, agent: AgentSpec, tool: McpTool) -> str:
    return (
        f"agent '{agent.name}' of agent network '{ctx.network.name}': MCP tool '{tool.spec.name}' from "
        f"{tool.url} has the same name as a tool already in this agent's tool list; skipping it. Rename one "
        "of them, or narrow the \"tools\" allow list under this server in the agent's hocon file."
    )
