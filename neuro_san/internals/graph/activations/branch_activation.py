"""``BranchActivation`` at neuro-san's import path: a coded tool that calls agents.

neuro-san-studio's coded tools (``DecompositionSolver``, ``WriteAllInstructions``,
``GetSubnetwork``, ``Copyist``) subclass both ``BranchActivation`` and ``CodedTool``.
neuro-san then builds them with ``(run_context, factory, arguments, agent_tool_spec,
sly_data)`` instead of no arguments, and they call other agents with :meth:`use_tool`.

Here ``run_context`` is the server's handle on the running call (an
:class:`AgentCaller`: it knows the request, the calling agent and its origin); the
other four are what neuro-san passes, ``factory`` being None (this server has no
activation factory to hand out). ``use_tool`` runs the named agent of the same network
(or ``/name``, a URL: whatever the agent's ``tools`` may name) exactly as if the coded
tool's agent had called it, journal and origins included, and returns its answer text.
"""

from __future__ import annotations

from typing import Any, Protocol


class AgentCaller(Protocol):
    """What the runtime hands a BranchActivation as its ``run_context``."""

    async def use_tool(self, tool_name: str, tool_args: dict[str, Any], sly_data: dict[str, Any] | None) -> str: ...

    def get_invocation_context(self) -> Any:
        """neuro-san's invocation context; this server has none (None)."""
        ...


class BranchActivation:
    """Base class for coded tools that call other agents (neuro-san's signature)."""

    def __init__(
        self,
        parent_run_context: AgentCaller | None,
        factory: Any,
        arguments: dict[str, Any] | None,
        agent_tool_spec: dict[str, Any],
        sly_data: dict[str, Any] | None,
    ) -> None:
        self.run_context = parent_run_context
        self.factory = factory
        self.arguments: dict[str, Any] = arguments if arguments is not None else {}
        self.agent_tool_spec = agent_tool_spec
        self.sly_data: dict[str, Any] = sly_data if sly_data is not None else {}

    def get_agent_tool_spec(self) -> dict[str, Any]:
        return self.agent_tool_spec

    async def use_tool(self, tool_name: str, tool_args: dict[str, Any], sly_data: dict[str, Any] | None = None) -> str:
        """Call the agent ``tool_name`` with ``tool_args``; its answer text."""
        if self.run_context is None:
            raise RuntimeError("this BranchActivation was built outside a running request: it cannot call agents")
        return await self.run_context.use_tool(tool_name, tool_args, sly_data)
