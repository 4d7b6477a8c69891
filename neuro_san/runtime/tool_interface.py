"""The one interface every kind of tool implements, and the sets agents are offered.

An LLM agent's ``tools`` list names what it may call: local agents (LLM sub-agents,
coded tools), other networks (``/name``, ``http(s)://…``), MCP servers. Each kind is a
:class:`Tool` (what the model sees, and how to call it) made by the :class:`ToolBinder`
for the agent's references. The loop (``agent_loop``) and the call wrapper (``tools``)
only ever see ``Tool``; the kinds live beside it (``tool_kinds``, ``mcp_tools``) and
depend on the loop, never the other way round, so the runtime has no import circle.

A new kind (an A2A agent, say) is a class with the members of ``Tool`` plus the lines
in ``tool_binding.AgentToolBinder`` that recognise its reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from neuro_san.core.messages import OriginPath
from neuro_san.llm.interface import ToolSpec
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.arguments import agent_input_text

if TYPE_CHECKING:
    from neuro_san.runtime.context import RequestContext

#: The telemetry label of a kind (``neuro_san.tool.kind`` and the tool-call metrics):
#: ``llm_agent``, ``coded_tool``, ``external_agent``, ``mcp_tool``…
ToolKind = str


class Tool(Protocol):
    """One function the model may call."""

    #: Name, description and JSON schema as the model sees them.
    @property
    def spec(self) -> ToolSpec: ...

    #: How the stream names it: ``Invoking: `ref`…`` and the callee's origin.
    @property
    def ref(self) -> str: ...

    @property
    def kind(self) -> ToolKind: ...

    #: True when a call leaves this process (the span is then a client span).
    @property
    def remote(self) -> bool: ...

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        """Run it and return the text the model gets. ``origin`` is the callee's own
        origin. A failure the model should hear about is returned as ``Error: …``;
        failures of the run (limits, cancellation, the LLM) raise."""
        ...


@dataclass(frozen=True, slots=True)
class ToolSet:
    """An agent's tools as offered to the model: the specs, and each tool by function name."""

    specs: list[ToolSpec]
    by_name: Mapping[str, Tool]

    @classmethod
    def of(cls, tools: list[Tool]) -> ToolSet:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            by_name.setdefault(tool.spec.name, tool)  # the first claim of a name wins
        return cls([t.spec for t in by_name.values()], by_name)


class ToolBinder(Protocol):
    """Turns an agent's ``tools`` references into the tools offered to its model."""

    async def tool_set(self, ctx: RequestContext, agent: AgentSpec, origin: OriginPath = ()) -> ToolSet:
        """``origin`` is the agent's own: problems binding its tools (an unreachable
        MCP server…) are told on the stream under it."""
        ...

    async def bind(self, ctx: RequestContext, agent: AgentSpec, ref: str) -> list[Tool]:
        """The tools one reference of ``agent`` stands for (a local agent, ``/name``, a URL)."""
        ...


def build_agent_input(arguments: Mapping[str, Any], command: str) -> str:
    """The HUMAN message a called agent gets when its parameters are unknown; see
    :func:`neuro_san.runtime.arguments.agent_input_text`."""
    return agent_input_text(arguments, None, command)
