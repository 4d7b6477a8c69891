"""The ``run_context`` a ``BranchActivation`` coded tool gets: calling agents from code.

neuro-san-studio's coded tools that subclass neuro-san's ``BranchActivation``
(``neuro_san.internals.graph.activations.branch_activation``) call other agents with
``await self.use_tool(name, args, sly_data)``. Here that call goes through the same
path as a model's tool call made by the coded tool's agent: the callee is bound by the
network's tool binder (a local agent, ``/name`` or a URL), the call is journaled
(Invoking, the callee's own messages, AGENT_TOOL_RESULT) under a fresh instantiation of
the callee, and its answer text comes back.

The request's sly_data is shared by every agent of the request, so the ``sly_data``
argument is not a separate dict here: a tool passing its own ``sly_data`` (the usual
case) changes nothing; see docs/compatibility.md.
"""

from __future__ import annotations

import itertools
from typing import Any

from neuro_san.core.messages import OriginPath
from neuro_san.llm.interface import ToolCall
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.context import RequestContext
from neuro_san.runtime.tools import call_tool

_CALL_IDS = itertools.count(1)


class BranchCaller:
    """One coded tool call's handle on its request (``BranchActivation.run_context``)."""

    def __init__(self, ctx: RequestContext, agent: AgentSpec, origin: OriginPath) -> None:
        self._ctx = ctx
        self._agent = agent
        self._origin = origin

    async def use_tool(self, tool_name: str, tool_args: dict[str, Any], sly_data: dict[str, Any] | None) -> str:
        if not tool_name.startswith("/") and "://" not in tool_name and tool_name not in self._ctx.network.agents:
            known = ", ".join(sorted(self._ctx.network.agents))
            raise ValueError(f"use_tool: {tool_name!r} is no agent of this network (its agents: {known})")
        bound = await self._ctx.tools.bind(self._ctx, self._agent, tool_name)
        if not bound:
            raise ValueError(f"use_tool: {tool_name!r} names no tool")
        tool = bound[0]
        call = ToolCall(id=f"branch_{next(_CALL_IDS)}", name=tool.spec.name, arguments=dict(tool_args or {}))
        # The coded tool is the caller: its origin is the one the callee hangs under.
        return await call_tool(self._ctx, self._agent, self._origin, {tool.spec.name: tool}, call)

    def get_invocation_context(self) -> None:
        """neuro-san's invocation context (session factories…): none on this server."""
        return None


def agent_tool_spec(agent: AgentSpec) -> dict[str, Any]:
    """The agent's entry as a plain dict, the shape neuro-san hands ``BranchActivation``."""
    spec: dict[str, Any] = {"name": agent.name, "function": dict(agent.function)}
    if agent.class_name:
        spec["class"] = agent.class_name
    if agent.args:
        spec["args"] = dict(agent.args)
    if agent.tools:
        spec["tools"] = list(agent.tools)
    if agent.instructions:
        spec["instructions"] = agent.instructions
    if agent.display_as:
        spec["display_as"] = agent.display_as
    return spec
