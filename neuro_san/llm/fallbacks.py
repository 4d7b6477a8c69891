"""``llm_config.fallbacks``: several models tried in order, as neuro-san 0.7 does.

neuro-san (``DefaultLlmFactory.create_llm_with_fallbacks``) reads ``fallbacks`` as a list
of whole llm_configs that replaces the config it sits in: the first entry that can be
built (its provider known, its key there) is the model, the later buildable ones are
LangChain ``with_fallbacks`` fallbacks, and an entry that cannot be built is skipped
with its reason kept for the error when none can. At call time LangChain's
``RunnableWithFallbacks`` hands the same input to the next model when one raises
(its default ``exceptions_to_handle`` is every ``Exception``), after that model's own
retries; the last failure is raised when all fail.

Here: the entries are built by the factory (:class:`FallbackModel` holds them), and a
call moves to the next model on any :class:`~neuro_san.llm.errors.LlmError` (the
provider failed after this server's retries: 5xx, 429, timeouts, refusals alike, as
LangChain's default); a cancelled request is never retried on another model. A config
whose entries can none be built fails with neuro-san's words and every reason. A config
with only ``fallbacks`` never runs on a default model.

Refused at load (``fallbacks_problem``): an empty or non-list ``fallbacks``, an entry
that is not a dict (neuro-san's nested lists, randomised peer groups, are not
supported), and keys beside ``fallbacks`` (neuro-san ignores them: put them in each
entry).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.errors import LlmError
from neuro_san.llm.interface import DeltaSink, LlmMessage, Model, ModelResponse, TextDelta, ToolSpec

log = logging.getLogger(__name__)

KEY = "fallbacks"
#: neuro-san's own text when no entry could be built.
NOTHING_BUILT = "No fully-specified LLM found in llm_config or fallbacks."


def has_fallbacks(llm_config: Mapping[str, Any]) -> bool:
    return KEY in llm_config


def fallbacks_problem(llm_config: Mapping[str, Any]) -> str | None:
    """Why ``llm_config``'s ``fallbacks`` cannot be served, or None (also when it has none)."""
    if KEY not in llm_config:
        return None
    entries = llm_config[KEY]
    if not isinstance(entries, list) or not entries:
        return f"fallbacks must be a non-empty list of llm_configs, not {entries!r}"
    for index, entry in enumerate(entries):
        if isinstance(entry, list):
            return f"fallbacks[{index}]: a list of peers (tried in random order) is not supported; list the entries"
        if not isinstance(entry, dict):
            return f"fallbacks[{index}] must be an llm_config dict, not {entry!r}"
        if KEY in entry:
            return f"fallbacks[{index}] has fallbacks of its own; list every model in one fallbacks list"
    beside = sorted(str(key) for key in llm_config if key != KEY)
    if beside:
        return (
            f"{', '.join(beside)} beside fallbacks would be ignored (neuro-san reads only the entries): "
            "put them in each fallbacks entry"
        )
    return None


def entries(llm_config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The llm_configs a config stands for: its fallbacks entries, or itself."""
    if KEY in llm_config and isinstance(llm_config[KEY], list):
        return [entry for entry in llm_config[KEY] if isinstance(entry, Mapping)]
    return [llm_config]


def build_fallbacks(
    llm_config: Mapping[str, Any], build: Callable[[Mapping[str, Any]], Model]
) -> Model:
    """The model for a config with ``fallbacks``: each entry built with ``build`` (the
    ones that cannot be are skipped, with their reason logged), in order."""
    problem = fallbacks_problem(llm_config)
    if problem:
        raise ConfigurationError(f"llm_config: {problem}")
    models: list[Model] = []
    reasons: list[str] = []
    for index, entry in enumerate(entries(llm_config)):
        try:
            models.append(build(entry))
        except ConfigurationError as error:
            reasons.append(f"fallbacks[{index}]: {error.message}")
    if not models:
        raise ConfigurationError(NOTHING_BUILT + " The following errors occurred: " + "; ".join(reasons))
    for reason in reasons:
        log.warning("llm_config entry skipped: %s", reason)
    return models[0] if len(models) == 1 else FallbackModel(models)


class FallbackModel:
    """Models tried in order: the next one gets the same call when one fails."""

    def __init__(self, models: Sequence[Model]) -> None:
        self.models = tuple(models)

    @property
    def provider(self) -> str:
        return self.models[0].provider

    @property
    def model_name(self) -> str:
        return self.models[0].model_name

    async def complete(
        self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec], on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        """The first model's answer, else the next one's. While token streaming, a model
        that fails after its first delta is not replaced: its text already reached the
        client, and another model's answer would not continue it; the error stands."""
        last: LlmError | None = None
        streamed = False

        def sink(delta: TextDelta) -> None:
            nonlocal streamed
            streamed = True
            if on_delta is not None:
                on_delta(delta)

        for position, model in enumerate(self.models):
            try:
                return await model.complete(messages, tools, on_delta=sink if on_delta is not None else None)
            except LlmError as error:
                last = error
                if streamed:
                    raise
                if position + 1 < len(self.models):
                    following = self.models[position + 1]
                    log.warning(
                        "model %s:%s failed (%s); falling back to %s:%s",
                        model.provider, model.model_name, error, following.provider, following.model_name,
                    )  # fmt: skip
        assert last is not None
        raise last
