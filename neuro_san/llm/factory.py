"""``LlmFactory``: resolved llm_configs in, shared models out.

It lays ``AGENT_LLM_OVERRIDE`` over every agent's llm_config, resolves the result
(:func:`~neuro_san.llm.config.resolve_llm_config`), and keeps one model per resolved
config, all over one :class:`~neuro_san.llm.http.HttpPool` (``AGENT_LLM_MAX_CONNECTIONS``
connections per endpoint).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.anthropic import AnthropicModel
from neuro_san.llm.config import ResolvedConfig, resolve_llm_config
from neuro_san.llm.http import DEFAULT_CONNECTION_LIMIT, HttpPool
from neuro_san.llm.interface import Model
from neuro_san.llm.openai_chat import OpenAIChatModel

OVERRIDE_ENV = "AGENT_LLM_OVERRIDE"
CONNECTIONS_ENV = "AGENT_LLM_MAX_CONNECTIONS"
_CONFIG_CACHE_SIZE = 4096


def parse_override(text: str | None) -> dict[str, Any]:
    """The ``AGENT_LLM_OVERRIDE`` JSON object (empty when unset)."""
    if not text or not text.strip():
        return {}
    try:
        override = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"{OVERRIDE_ENV} is not valid JSON: {error.msg}") from None
    if not isinstance(override, dict):
        raise ConfigurationError(f"{OVERRIDE_ENV} must be a JSON object")
    return override


def _connection_limit(text: str | None) -> int:
    if not text or not text.strip():
        return DEFAULT_CONNECTION_LIMIT
    try:
        limit = int(text)
    except ValueError:
        raise ConfigurationError(f"{CONNECTIONS_ENV} must be a whole number, got {text!r}") from None
    if limit < 1:
        raise ConfigurationError(f"{CONNECTIONS_ENV} must be at least 1, got {limit}")
    return limit


def apply_override(llm_config: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``llm_config`` with ``override`` laid over it.

    When the override names a ``class`` or ``model_name``, the agent's own ``class`` is
    dropped first, so the override decides the provider (``class: scripted`` included).
    """
    merged = dict(llm_config)
    if "class" in override or "model_name" in override:
        merged.pop("class", None)
    merged.update(override)
    return merged


class LlmFactory:
    """The :class:`~neuro_san.llm.interface.ModelFactory` of the server.

    Models are cached per :class:`ResolvedConfig`, so agents with the same effective
    configuration share one model, and all models share one :class:`HttpPool`.
    """

    def __init__(self, *, env: Mapping[str, str] | None = None, pool: HttpPool | None = None):
        """``env`` defaults to a snapshot of ``os.environ`` (``AGENT_LLM_OVERRIDE`` included)."""
        self._env: dict[str, str] = dict(os.environ if env is None else env)
        self._override = parse_override(self._env.get(OVERRIDE_ENV))
        self._pool = pool or HttpPool(connection_limit=_connection_limit(self._env.get(CONNECTIONS_ENV)))
        self._models: dict[ResolvedConfig, Model] = {}
        self._by_config: dict[int, tuple[Mapping[str, Any], Model]] = {}

    @property
    def pool(self) -> HttpPool:
        return self._pool

    def create(self, llm_config: Mapping[str, Any]) -> Model:
        """The shared model for ``llm_config`` (after ``AGENT_LLM_OVERRIDE``).

        Every agent invocation asks, with its spec's llm_config: the same read-only object
        each time (specs are frozen; a reload makes new ones). So the answer is kept per
        read-only object (held here, so its id cannot be reused) and resolution runs once
        per spec. A plain dict could change between calls, so it is resolved every time.
        """
        if not isinstance(llm_config, MappingProxyType):
            return self._create(llm_config)
        cached = self._by_config.get(id(llm_config))
        if cached is not None and cached[0] is llm_config:
            return cached[1]
        model = self._create(llm_config)
        if len(self._by_config) >= _CONFIG_CACHE_SIZE:  # reloads bring new specs; stay bounded
            self._by_config.clear()
        self._by_config[id(llm_config)] = (llm_config, model)
        return model

    def _create(self, llm_config: Mapping[str, Any]) -> Model:
        merged = apply_override(llm_config, self._override)
        resolved = resolve_llm_config(merged, self._env)
        model = self._models.get(resolved)
        if model is None:
            model = self._build(resolved, merged)
            self._models[resolved] = model
        return model

    def _build(self, resolved: ResolvedConfig, merged: Mapping[str, Any]) -> Model:
        if resolved.provider == "scripted":
            # Imported here: the scripted model is optional for servers with real LLMs.
            from neuro_san.llm.scripted import ScriptedModel

            model: Model = ScriptedModel.from_config(merged)
            return model
        if resolved.provider == "anthropic":
            return AnthropicModel(
                self._pool,
                resolved.endpoint(),
                resolved.model_name,
                temperature=resolved.temperature,
                max_tokens=resolved.max_tokens,
            )
        return OpenAIChatModel(
            self._pool,
            resolved.endpoint(),
            resolved.model_name,
            temperature=resolved.temperature,
            max_tokens=resolved.max_tokens,
            # OpenAI's reasoning-model rules are OpenAI's; local servers keep the plain ones.
            reasoning=None if resolved.provider in ("openai", "azure-openai") else False,
        )

    async def aclose(self) -> None:
        """Close the shared HTTP sessions."""
        await self._pool.aclose()
