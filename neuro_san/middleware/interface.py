"""The interface between the agent loop and a middleware.

The agent loop (``neuro_san.runtime.agent_loop``) calls a chain of middlewares at two
points of every model round trip:

- ``before_model(turn)`` just before the model is asked: it may rewrite
  ``turn.messages`` in place (redact, summarise: the changes stay for the rest of the
  invocation, as LangChain's state updates do) or narrow ``turn.tools``; raising
  :class:`AgentStopped` ends the agent's invocation with that text as its answer,
  without calling the model.
- ``after_model(turn, response)`` with the model's answer; it returns the answer to use.
- ``after_agent(answer)`` once, with the agent's final answer; it returns the answer to use.

``before_model`` runs in list order, ``after_model`` and ``after_agent`` in reverse order,
as in LangChain.
An instance lives for one agent invocation, so it may keep per-invocation state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuro_san.llm.interface import LlmMessage, ModelResponse, ToolSpec

if TYPE_CHECKING:
    from neuro_san.core.messages import OriginPath
    from neuro_san.network.spec import AgentSpec
    from neuro_san.runtime.context import RequestContext


class AgentStopped(Exception):
    """A middleware ends the agent's invocation; ``str(error)`` becomes its answer."""


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


class AgentMiddleware:
    """Base class: both hooks do nothing. Subclasses override what they need."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation

    async def before_model(self, turn: ModelTurn) -> None:
        return None

    async def after_model(self, turn: ModelTurn, response: ModelResponse) -> ModelResponse:
        return response

    async def after_agent(self, answer: str) -> str:
        return answer
