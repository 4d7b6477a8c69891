"""Conversation summarisation past a threshold (``NeuroSanSummarizationMiddleware`` keys).

Before a model call, when the conversation (everything but the system prompt) reaches
any ``trigger`` (``["messages", n]`` or ``["tokens", n]``), all but the most recent
``keep`` messages are replaced by one user message,
``Here is a summary of the conversation to date:\\n\\n<summary>``. The summary comes from
one extra model call, made through this server's LLM factory with the agent's
llm_config and ``model`` as its model name (neuro-san bypasses its own factory there).

``keep_summary_in_context: true`` (the default) also makes the front man's returned
chat_context start from the summary, so the next turn carries the short version; with
false, only the model sees it.

Tokens are estimated (4 characters a token): no tokenizer is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuro_san.core.messages import ChatContext, ChatHistory, ChatMessage, MessageType, OriginPath
from neuro_san.llm.interface import LlmMessage
from neuro_san.middleware.interface import AgentMiddleware, Invocation, ModelTurn
from neuro_san.network.middleware_config import SummarizationSettings, Threshold

if TYPE_CHECKING:
    from neuro_san.runtime.context import RequestContext

SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
DEFAULT_PROMPT = (
    "You condense conversations. Write a short summary of the messages below that keeps "
    "every fact, name, number, decision and open question the conversation will need to "
    "go on. Answer with the summary only.\n\nMessages to summarize:\n{messages}"
)
_CHARS_PER_TOKEN = 4


def estimate_tokens(messages: list[LlmMessage]) -> int:
    return sum(len(m.content) + sum(len(c.raw_arguments) for c in m.tool_calls) for m in messages) // _CHARS_PER_TOKEN


def _reached(threshold: Threshold, messages: list[LlmMessage]) -> bool:
    if threshold.unit == "messages":
        return len(messages) >= threshold.value
    return estimate_tokens(messages) >= threshold.value


def _cut(keep: Threshold, messages: list[LlmMessage]) -> int:
    """Where the kept tail starts. It never starts on a tool result, which would be
    separated from the assistant turn that asked for it."""
    if keep.unit == "messages":
        cut = max(len(messages) - int(keep.value), 0)
    else:
        cut, budget = len(messages), keep.value
        while cut > 0 and estimate_tokens(messages[cut - 1 : cut]) <= budget:
            budget -= estimate_tokens(messages[cut - 1 : cut])
            cut -= 1
    while 0 < cut < len(messages) and messages[cut].role == "tool":
        cut -= 1
    return cut


def _transcript(messages: list[LlmMessage], max_tokens: int | None) -> str:
    lines = [f"<message type=\"{m.role}\">{m.content}</message>" for m in messages]
    if max_tokens is not None:
        budget = max_tokens * _CHARS_PER_TOKEN
        kept: list[str] = []
        for line in reversed(lines):  # the most recent messages matter most
            if len(line) > budget:
                break
            kept.append(line)
            budget -= len(line)
        lines = list(reversed(kept))
    return "\n".join(lines)


class SummarizationMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: SummarizationSettings) -> None:
        super().__init__(invocation)
        self.settings = settings

    async def before_model(self, turn: ModelTurn) -> None:
        messages = turn.messages
        head = 1 if messages and messages[0].role == "system" else 0
        conversation = messages[head:]
        if not any(_reached(t, conversation) for t in self.settings.trigger):
            return
        cut = _cut(self.settings.keep, conversation)
        if cut == 0:
            return
        summary = await self._summarise(conversation[:cut])
        summary_message = LlmMessage(role="user", content=SUMMARY_PREFIX + summary)
        messages[head:] = [summary_message, *conversation[cut:]]
        ctx, origin = self.invocation.ctx, self.invocation.origin
        ctx.emit(MessageType.AGENT, origin, summary)
        if self.settings.keep_summary_in_context:
            ctx.history_rewrites[origin] = list(messages[head:])

    async def _summarise(self, messages: list[LlmMessage]) -> str:
        ctx, agent = self.invocation.ctx, self.invocation.agent
        llm_config = dict(agent.llm_config)
        if self.settings.model and "fallbacks" in llm_config:
            llm_config = {"model_name": self.settings.model}  # the named model, as neuro-san asks for it
        elif self.settings.model:
            llm_config["model_name"] = self.settings.model
        model = ctx.models.create(llm_config, ctx.llm_keys)
        prompt = (self.settings.summary_prompt or DEFAULT_PROMPT).replace(
            "{messages}", _transcript(messages, self.settings.trim_tokens_to_summarize)
        )
        response = await model.complete([LlmMessage(role="user", content=prompt)], [])
        ctx.record_usage(f"{model.provider}:{model.model_name}", response.usage)
        return response.text.strip()


def summarised_context(
    ctx: RequestContext, origin: OriginPath, answer: str, max_messages: int | None
) -> ChatContext | None:
    """The chat_context to return when summarisation rewrote this agent's conversation
    (``keep_summary_in_context``): the summary, the messages kept after it, the answer.
    None when nothing was rewritten."""
    kept = ctx.history_rewrites.get(origin)
    if kept is None:
        return None
    messages = [
        ChatMessage(type=MessageType.HUMAN if m.role == "user" else MessageType.AI, text=m.content, origin=origin)
        for m in kept
        if m.role in ("user", "assistant") and not m.tool_calls and m.content
    ]
    messages.append(ChatMessage(type=MessageType.AI, text=answer, origin=origin))
    if max_messages:
        messages = messages[-max_messages:]
    return ChatContext(chat_histories=[ChatHistory(origin=origin, messages=messages)])
