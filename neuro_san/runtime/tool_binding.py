"""From an agent's ``tools`` references to the tools its model is offered.

``AgentToolBinder`` is the one place that knows every kind: a local agent name is a
sub-agent or a coded tool, an MCP server (``network.mcp_refs``) gives its tools, ``/name``
and other URLs are external agents. References are bound in the order written; when two
tools claim one function name the first keeps it. The sets of agents whose tools are all
local are computed once per agent spec (their schemas cannot change); external agents'
functions and MCP tool lists are asked for on each invocation (MCP lists are cached by
``mcp_sessions``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from neuro_san.core.messages import MessageType, OriginPath
from neuro_san.llm.interface import ToolSpec
from neuro_san.llm.schema import tool_parameters_schema
from neuro_san.network.mcp_refs import McpServerRef
from neuro_san.network.spec import AgentSpec, is_external_ref
from neuro_san.runtime.arguments import synthesized_inquiry_schema
from neuro_san.runtime.mcp_server_tools import McpClients, bind_mcp_server, collision_notice
from neuro_san.runtime.tool_interface import Tool, ToolSet
from neuro_san.runtime.tool_kinds import ExternalAgentTool, LocalAgentTool

if TYPE_CHECKING:
    from neuro_san.runtime.context import RequestContext
    from neuro_san.runtime.external import ExternalAgents

_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")

def tool_function_name(ref: str) -> str:
    """A provider-safe function name for a tool reference.

    Local agent names are already safe. External references (``/deep/x``,
    ``http://host:8080/x``) become ``__`` + their path with ``/`` as ``__``
    (``__deep__x``), as neuro-san names them, so they never clash with a local tool."""
    if not is_external_ref(ref):
        return ref
    ref = ref.split("#", 1)[0]  # an A2A reference's header-set label is not part of the name
    path = ref.split("://", 1)[1].split("/", 1)[1] if "://" in ref else ref.lstrip("/")
    return ("__" + _TOOL_NAME.sub("_", path.replace("/", "__")))[:64]


def _spec(ref: str, function: Mapping[str, object], external: bool) -> ToolSpec:
    description = str(function.get("description", "")) or f"Calls {ref}."
    params = function.get("parameters")
    schema = tool_parameters_schema(params if isinstance(params, Mapping) else None)
    if external and not schema.get("properties"):
        schema = synthesized_inquiry_schema(ref)
    return ToolSpec(tool_function_name(ref), description, schema)


#: id(agent spec) → (agent spec, its network, its ToolSet), for agents without external
#: tools. Both specs are held so their ids cannot be reused; specs are never mutated (a
#: reload makes new ones), so a hit is exactly what bind_tools would compute again.
_TOOL_SETS: dict[int, tuple[AgentSpec, object, ToolSet]] = {}
_TOOL_SETS_SIZE = 4096


class AgentToolBinder:
    """The :class:`~neuro_san.runtime.tool_interface.ToolBinder` of a ``NetworkRunner``."""

    def __init__(self, externals: ExternalAgents, mcp: McpClients | None = None) -> None:
        self.externals = externals
        self.mcp = mcp or McpClients()

    async def tool_set(self, ctx: RequestContext, agent: AgentSpec, origin: OriginPath = ()) -> ToolSet:
        cached = _TOOL_SETS.get(id(agent))
        if cached is not None and cached[0] is agent and cached[1] is ctx.network:
            return cached[2]
        tools = ToolSet.of(await self.bind_tools(ctx, agent, origin))
        if not agent.mcp_servers and not any(is_external_ref(ref) for ref in agent.tools):
            if len(_TOOL_SETS) >= _TOOL_SETS_SIZE:
                _TOOL_SETS.clear()
            _TOOL_SETS[id(agent)] = (agent, ctx.network, tools)
        return tools

    async def bind_tools(self, ctx: RequestContext, agent: AgentSpec, origin: OriginPath = ()) -> list[Tool]:
        tools: list[Tool] = []
        taken: set[str] = set()
        for ref in _written_order(agent):
            if isinstance(ref, McpServerRef):
                for tool in await bind_mcp_server(ctx, agent, origin, ref, self.mcp):
                    if tool.spec.name in taken:
                        ctx.emit(MessageType.AGENT, origin, collision_notice(ctx, agent, tool))
                        continue
                    taken.add(tool.spec.name)
                    tools.append(tool)
                continue
            for bound in await self.bind(ctx, agent, ref):
                taken.add(bound.spec.name)
                tools.append(bound)
        return tools

    async def bind(self, ctx: RequestContext, agent: AgentSpec, ref: str) -> list[Tool]:
        """The tools one reference stands for (several for an MCP server)."""
        if is_external_ref(ref):
            function = await self.externals.function(ref)
            return [ExternalAgentTool(_spec(ref, function, external=True), ref, self.externals)]
        callee = ctx.network.agents[ref]
        spec = _spec(ref, callee.function, external=False)
        return [LocalAgentTool.for_agent(spec, callee)]


def _written_order(agent: AgentSpec) -> list[str | McpServerRef]:
    """The agent's references in the order its ``tools`` list was written: MCP servers
    (string or dict) at their positions, the other names in between."""
    servers = {server.position: server for server in agent.mcp_servers}
    mcp_urls = {server.url for server in agent.mcp_servers if server.listed}
    others = iter(ref for ref in agent.tools if ref not in mcp_urls)
    count = len([r for r in agent.tools if r not in mcp_urls]) + len(servers)
    return [servers[i] if i in servers else next(others) for i in range(count)]
