"""What the agent loop calls: one chain of middleware instances per agent invocation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from neuro_san.llm.interface import LlmMessage, ModelResponse, ToolSpec
from neuro_san.middleware import registry
from neuro_san.middleware.interface import (
    AgentAnswered,
    AgentMiddleware,
    AgentStopped,
    Invocation,
    MiddlewareTool,
    ModelTurn,
)
from neuro_san.middleware.summarization import summarised_context

if TYPE_CHECKING:
    from neuro_san.core.messages import ChatContext, OriginPath
    from neuro_san.network.spec import AgentSpec
    from neuro_san.runtime.context import RequestContext

T = TypeVar("T")


class MiddlewareChain:
    """An agent's middlewares, in list order, for one invocation."""

    def __init__(self, instances: list[AgentMiddleware], agent_name: str) -> None:
        self.instances = instances
        self.agent_name = agent_name
        self.tools: list[ToolSpec] = []
        #: The system prompt as the agent wrote it (None until the first call; "" for none).
        self._base_system: str | None = None

    def extra_tools(self) -> list[MiddlewareTool]:
        """The tools the middlewares add, in list order (the first claim of a name wins)."""
        return [tool for middleware in self.instances for tool in middleware.tools()]

    async def _apply_system_prompts(self, messages: list[LlmMessage]) -> None:
        """The system prompt of this call: the agent's, then each middleware's addition."""
        additions = [text for m in self.instances if (text := await m.system_prompt())]
        has_system = bool(messages) and messages[0].role == "system"
        if self._base_system is None:
            if not additions:
                return
            self._base_system = messages[0].content if has_system else ""
        content = "\n\n".join(part for part in (self._base_system, *additions) if part)
        if has_system:
            messages[0] = replace(messages[0], content=content)
        elif content:
            messages.insert(0, LlmMessage(role="system", content=content))

    async def before_model(self, messages: list[LlmMessage], tools: list[ToolSpec]) -> str | None:
        """Let each middleware rewrite ``messages`` (in place) and narrow ``tools``
        (returned through :attr:`tools`). Returns the agent's answer when a middleware
        stops it (the model is then not called), else None."""
        await self._apply_system_prompts(messages)
        turn = ModelTurn(messages, list(tools))
        try:
            for middleware in self.instances:
                await middleware.before_model(turn)
        except AgentStopped as stop:
            return self._stopped(stop)
        self.tools = turn.tools
        return None

    def offered(self, bindings: Mapping[str, T]) -> Mapping[str, T]:
        """``bindings`` narrowed to the tools the last model call was offered: a call to
        any other tool gets an error result and does not run."""
        if len(self.tools) == len(bindings):
            return bindings
        names = {t.name for t in self.tools}
        return {name: binding for name, binding in bindings.items() if name in names}

    async def after_model(self, messages: list[LlmMessage], response: ModelResponse) -> ModelResponse:
        """Let each middleware (last first) rewrite the model's answer. A middleware that
        stops the agent here turns the answer into the stop text, with no tool calls."""
        turn = ModelTurn(messages, self.tools)
        try:
            for middleware in reversed(self.instances):
                response = await middleware.after_model(turn, response)
        except AgentStopped as stop:
            return ModelResponse(text=self._stopped(stop), usage=response.usage, model=response.model)
        return response

    def _stopped(self, stop: AgentStopped) -> str:
        if isinstance(stop, AgentAnswered):
            return str(stop)
        # neuro-san's wording for an agent ended by a middleware exception; the agent loop's
        # error formatter (runtime/error_format.py) turns it into "Error from <agent>: …".
        return f"Agent stopped due to exception {stop}"

    async def review(self, answer: str) -> str | None:
        """The first objection of the middlewares (last first) to ``answer``, or None."""
        for middleware in reversed(self.instances):
            objection = await middleware.review(answer)
            if objection:
                return objection
        return None

    async def after_agent(self, answer: str) -> str:
        for middleware in reversed(self.instances):
            answer = await middleware.after_agent(answer)
        return answer


def middleware_chain(ctx: RequestContext, agent: AgentSpec, origin: OriginPath) -> MiddlewareChain | None:
    """The chain for one invocation of ``agent``; None when it has no middleware."""
    if not agent.middleware:
        return None
    invocation = Invocation(ctx, agent, origin)
    return MiddlewareChain([registry.build(config, invocation) for config in agent.middleware], agent.name)


def rewritten_context(
    ctx: RequestContext, origin: OriginPath, answer: str, max_messages: int | None
) -> ChatContext | None:
    """The chat_context to return when a middleware rewrote this agent's conversation
    (summarisation's ``keep_summary_in_context``); None when none did. The runtime reaches
    middleware only through this module, so which middleware rewrites stays in here."""
    return summarised_context(ctx, origin, answer, max_messages)
