"""LLM-driven tool selection (``LlmConfigToolSelectorMiddleware`` keys).

Before each model call of an agent with many tools, one extra call to the selector model
(``llm_config``, with its ``fallbacks`` tried in order) picks the tools relevant to the
last user message; the agent's model is then offered only those (at most ``max_tools``,
plus ``always_include``). A tool call naming a tool that was not offered is answered
with an error result and not run, as neuro-san enforces it. The selector's raw answer is
journaled as an AGENT message.

Deviations, on purpose: the selector is asked for JSON in its instructions (this
server's model interface has no structured-output mode), and an answer that names no
known tool leaves all tools offered instead of failing the request. ``unadvertised_policy``
is accepted for compatibility: every tool call here comes from a model call whose
offered tools are known, so it never applies.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.core.messages import MessageType
from neuro_san.llm.errors import LlmError
from neuro_san.llm.interface import LlmMessage, Model, ModelResponse
from neuro_san.llm.structure import extract_json_object
from neuro_san.middleware.interface import AgentMiddleware, Invocation, ModelTurn
from neuro_san.network.middleware_config import ToolSelectionSettings

log = logging.getLogger(__name__)

DEFAULT_PROMPT = "Your goal is to select the most relevant tools for answering the user's query."


class ToolSelectionMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: ToolSelectionSettings) -> None:
        super().__init__(invocation)
        self.settings = settings

    async def before_model(self, turn: ModelTurn) -> None:
        always = set(self.settings.always_include)
        candidates = [t for t in turn.tools if t.name not in always]
        last_user = next((m.content for m in reversed(turn.messages) if m.role == "user"), "")
        if not candidates or not last_user:
            return
        answer = await self._select(candidates, last_user)
        ctx, origin = self.invocation.ctx, self.invocation.origin
        ctx.emit(MessageType.AGENT, origin, answer)
        chosen = _chosen_names(answer, {t.name for t in candidates})
        if chosen is None:
            log.info("tool selection for %s named no known tool; offering all", self.invocation.agent.name)
            return
        if self.settings.max_tools is not None:
            chosen = chosen[: self.settings.max_tools]
        keep = set(chosen) | always
        turn.tools[:] = [t for t in turn.tools if t.name in keep]

    async def _select(self, candidates: list[Any], last_user: str) -> str:
        listing = "\n".join(f"- {t.name}: {t.description}" for t in candidates)
        prompt = self.settings.system_prompt or DEFAULT_PROMPT
        prompt += (
            "\nIMPORTANT: List the tool names in order of relevance, with the most relevant first."
            + (
                f" If you exceed the maximum number of tools, only the first {self.settings.max_tools} will be used."
                if self.settings.max_tools is not None
                else ""
            )
            + '\nAnswer with JSON only, in the form {"tools": ["name", ...]}, choosing from:\n'
            + listing
        )
        messages = [LlmMessage(role="system", content=prompt), LlmMessage(role="user", content=last_user)]
        response = await self._complete(messages)
        return response.text

    async def _complete(self, messages: list[LlmMessage]) -> ModelResponse:
        ctx = self.invocation.ctx
        failure: Exception | None = None
        for config in self._configs():
            try:
                model: Model = ctx.models.create(config, ctx.llm_keys)
                response = await model.complete(messages, [])
            except (ConfigurationError, LlmError) as error:  # the next fallback, if any
                failure = error
                continue
            ctx.record_usage(f"{model.provider}:{model.model_name}", response.usage)
            return response
        assert failure is not None
        raise failure

    def _configs(self) -> list[Mapping[str, Any]]:
        base = {**self.invocation.agent.llm_config}
        own = dict(self.settings.llm_config)
        if "fallbacks" in base and own:
            base = {}  # the selector names its own model(s); the agent's fallbacks are the agent's
        elif "fallbacks" in base:
            return [base]  # the factory tries the agent's fallbacks in order
        fallbacks = own.pop("fallbacks", None) or [{}]
        return [{**base, **own, **fallback} for fallback in fallbacks]


def _chosen_names(answer: str, known: set[str]) -> list[str] | None:
    """The known tool names the selector chose, in its order; None when none."""
    structure, _ = extract_json_object(answer)
    names: Any = structure.get("tools") if structure else None
    if names is None:
        try:
            names = json.loads(answer)
        except json.JSONDecodeError:
            return None
    if not isinstance(names, list):
        return None
    chosen = list(dict.fromkeys(n for n in names if isinstance(n, str) and n in known))
    return chosen or None
