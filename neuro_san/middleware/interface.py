"""The interface between the agent loop and a middleware.

The agent loop (``neuro_san.runtime.agent_loop``) calls a chain of middlewares at two
points of every model round trip:

- ``before_model(turn)`` just before the model is asked: it may rewrite
  ``turn.messages`` in place (redact, summarise: the changes stay for the rest of the
  invocation, as LangChain's state updates do) or narrow ``turn.tools``; raising
  :class:`AgentStopped` ends the agent's invocation with that text as its answer,
  without calling the model (:class:`AgentAnswered`: that text verbatim, not an error).
- ``after_model(turn, response)`` with the model's answer; it returns the answer to use.
- ``after_agent(answer)`` once, with the agent's final answer; it returns the answer to use.

``before_model`` runs in list order, ``after_model`` and ``after_agent`` in reverse order,
as in LangChain.
An instance lives for one agent invocation, so it may keep per-invocation state.

Two more hooks, for middleware that gives the agent abilities (neuro-san-studio's):

- ``tools()``: :class:`MiddlewareTool` s the model is offered besides the agent's own (a
  LangChain middleware's ``tools`` attribute); their calls run the middleware's handler
  and are journaled like any tool call.
- ``system_prompt()``: text added to the system prompt of each model call (computed per
  call, so it can show state that changes, like a checklist; it is not kept between calls).
- ``review(answer)``: an after-agent check of an answer the model gave without tool
  calls; text returned sends the model back (its answer, then that text as the user's)
  instead of ending the invocation (LangChain's ``after_agent`` with ``jump_to: model``).

A middleware reads and writes the request's sly_data as ``self.invocation.ctx.sly_data``
and reports progress with ``self.invocation.ctx.emit`` (AGENT_PROGRESS).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neuro_san.llm.interface import LlmMessage, ModelResponse, ToolSpec

if TYPE_CHECKING:
    from neuro_san.core.messages import OriginPath
    from neuro_san.network.spec import AgentSpec
    from neuro_san.runtime.context import RequestContext


class AgentStopped(Exception):
    """A middleware ends the agent's invocation; ``str(error)`` becomes its answer."""


class AgentAnswered(AgentStopped):
    """A middleware ends the agent's invocation with ``str(error)`` as its answer, verbatim
    (LangChain's ``jump_to: end`` with an AI message), not as an "Agent stopped" error."""


@dataclass
class ModelTurn:
    """What the model is about to be sent. Middlewares may change both lists."""

    #: The system prompt (when the agent has instructions) and the conversation.
    messages: list[LlmMessage]
    tools: list[ToolSpec]


@dataclass(frozen=True, slots=True)
class Invocation:
    """The agent invocation a middleware instance serves."""

    ctx: RequestContext
    agent: AgentSpec
    origin: OriginPath


#: A middleware tool's work: the model's arguments in, the result out (text, or data sent as JSON).
ToolHandler = Callable[[Mapping[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class MiddlewareTool:
    """A tool a middleware adds (it has the members of ``runtime.tool_interface.Tool``)."""

    spec: ToolSpec
    handler: ToolHandler
    kind: str = "middleware_tool"
    remote: bool = False

    @property
    def ref(self) -> str:
        return self.spec.name

    async def call(
        self, ctx: RequestContext, caller: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
    ) -> str:
        result = await self.handler(arguments)
        if isinstance(result, str):
            return result
        return json.dumps(result, ensure_ascii=False, default=str)


class AgentMiddleware:
    """Base class: every hook does nothing. Subclasses override what they need."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation

    async def before_model(self, turn: ModelTurn) -> None:
        return None

    async def after_model(self, turn: ModelTurn, response: ModelResponse) -> ModelResponse:
        return response

    async def after_agent(self, answer: str) -> str:
        return answer

    def tools(self) -> list[MiddlewareTool]:
        return []

    async def system_prompt(self) -> str | None:
        return None

    async def review(self, answer: str) -> str | None:
        return None
