"""The tool kinds of a network itself: LLM sub-agents, coded tools, external agents.

Each is a small :class:`~neuro_san.runtime.tool_interface.Tool`; the work stays where
it was (``agent_loop.run_llm_agent``, ``coded_tools.run_coded_tool``,
``external.ExternalAgents.call``). MCP tools are in ``mcp_tools``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neuro_san.core.messages import OriginPath
from neuro_san.llm.interface import ToolSpec
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.agent_loop import run_llm_agent
from neuro_san.runtime.arguments import agent_input_text
from neuro_san.runtime.coded_tools import run_coded_tool
from neuro_san.runtime.tool_interface import ToolKind

if TYPE_CHECKING:
    from neuro_san.runtime.context import RequestContext
    from neuro_san.runtime.external import ExternalAgents


#: How a local agent runs as a tool: ``(ctx, callee, callee's origin, arguments)`` in,
#: the text the calling model gets out.
LocalRun = Callable[["RequestContext", AgentSpec, OriginPath, Mapping[str, Any]], Awaitable[str]]


async def _run_sub_agent(
    ctx: RequestContext, agent: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
) -> str:
    # An LLM agent gets the arguments as sentences plus its command.
    text = agent_input_text(arguments, agent.function.get("parameters"), agent.command)
    return await run_llm_agent(ctx, agent, origin, text)


@dataclass(frozen=True, slots=True)
class LocalAgentTool:
    """An agent of the same network: an LLM sub-agent or a coded tool (neuro-san's
    ``CodedTool`` class). The two differ only in ``kind`` and in how a call runs."""

    spec: ToolSpec
    agent: AgentSpec
    kind: ToolKind
    run: LocalRun
    remote: bool = False

    @classmethod
    def for_agent(cls, spec: ToolSpec, agent: AgentSpec) -> LocalAgentTool:
        if agent.kind == "coded_tool":
            return cls(spec, agent, "coded_tool", run_coded_tool)
        return cls(spec, agent, "llm_agent", _run_sub_agent)

    @property
    def ref(self) -> str:
        return self.agent.name

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        return await self.run(ctx, self.agent, origin, arguments)


@dataclass(frozen=True, slots=True)
class ExternalAgentTool:
    """Another network: ``/name`` on this server, or a neuro-san server by URL."""

    spec: ToolSpec
    ref: str
    externals: ExternalAgents
    kind: str = "external_agent"

    @property
    def remote(self) -> bool:
        return not self.ref.startswith("/")

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        return await self.externals.call(ctx, caller, origin, self.ref, arguments)
