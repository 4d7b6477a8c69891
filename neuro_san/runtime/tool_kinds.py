"""The tool kinds of a network itself: LLM sub-agents, coded tools, external agents.

Each is a small :class:`~neuro_san.runtime.tool_interface.Tool`; the work stays where
it was (``agent_loop.run_llm_agent``, ``coded_tools.run_coded_tool``,
``external.ExternalAgents.call``). MCP tools are in ``mcp_tools``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neuro_san.core.messages import OriginPath
from neuro_san.llm.interface import ToolSpec
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.agent_loop import run_llm_agent
from neuro_san.runtime.arguments import agent_input_text
from neuro_san.runtime.coded_tools import run_coded_tool

if TYPE_CHECKING:
    from neuro_san.runtime.context import RequestContext
    from neuro_san.runtime.external import ExternalAgents


@dataclass(frozen=True, slots=True)
class SubAgentTool:
    """An LLM agent of the same network: it gets the arguments as sentences plus its command."""

    spec: ToolSpec
    agent: AgentSpec
    kind: str = "llm_agent"
    remote: bool = False

    @property
    def ref(self) -> str:
        return self.agent.name

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        text = agent_input_text(arguments, self.agent.function.get("parameters"), self.agent.command)
        return await run_llm_agent(ctx, self.agent, origin, text)


@dataclass(frozen=True, slots=True)
class CodedToolTool:
    """A coded tool (neuro-san's ``CodedTool`` class) of the same network."""

    spec: ToolSpec
    agent: AgentSpec
    kind: str = "coded_tool"
    remote: bool = False

    @property
    def ref(self) -> str:
        return self.agent.name

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        return await run_coded_tool(ctx, self.agent, origin, arguments)


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
