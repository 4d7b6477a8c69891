"""``LlmFactory``: resolved llm_configs in, shared models out.

It lays ``AGENT_LLM_OVERRIDE`` over every agent's llm_config, fills bring-your-own-key
placeholders from the request (:mod:`~neuro_san.llm.byok`), resolves the result through
the LLM info table (``AGENT_LLM_INFO_FILE`` merged over the built-in one, read once) and
:func:`~neuro_san.llm.config.resolve_llm_config`, and keeps one model per resolved
config (never for configs holding a request's own key), all over one
:class:`~neuro_san.llm.http.HttpPool` (``AGENT_LLM_MAX_CONNECTIONS`` connections per
endpoint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from neuro_san.core.env_settings import env_number
from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.byok import fill_placeholders, placeholder_keys
from neuro_san.llm.config import ResolvedConfig, resolve_llm_config
from neuro_san.llm.fallbacks import KEY as FALLBACKS
from neuro_san.llm.fallbacks import build_fallbacks, has_fallbacks
from neuro_san.llm.fallbacks import entries as fallback_entries
from neuro_san.llm.http import DEFAULT_CONNECTION_LIMIT, HttpPool
from neuro_san.llm.interface import Model
from neuro_san.llm.llm_info import LlmInfo, load_llm_info
from neuro_san.llm.providers import lookup
from neuro_san.settings import process_env

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
    try:
        limit = env_number({CONNECTIONS_ENV: text or ""}, CONNECTIONS_ENV, int)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    if limit is None:
        return DEFAULT_CONNECTION_LIMIT
    if limit < 1:
        raise ConfigurationError(f"{CONNECTIONS_ENV} must be at least 1, got {limit}")
    return int(limit)


def apply_override(llm_config: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``llm_config`` with ``override`` laid over it.

    When the override names a ``class`` or ``model_name``, the agent's own ``class`` (and
    ``fallbacks``) is dropped first, so the override decides the provider (``class:
    scripted`` included). Otherwise it is laid over each ``fallbacks`` entry.
    """
    merged = dict(llm_config)
    if "class" in override or "model_name" in override:
        merged.pop("class", None)
        merged.pop(FALLBACKS, None)  # the override's model replaces every fallback too
    merged.update(override)
    return merged


class LlmFactory:
    """The :class:`~neuro_san.llm.interface.ModelFactory` of the server.

    Models are cached per :class:`ResolvedConfig`, so agents with the same effective
    configuration share one model, and all models share one :class:`HttpPool`.
    """

    def __init__(self, *, env: Mapping[str, str] | None = None, pool: HttpPool | None = None):
        """``env`` defaults to a copy of the process's settings (``AGENT_LLM_OVERRIDE`` included)."""
        self._env: dict[str, str] = dict(process_env() if env is None else env)
        self._override = parse_override(self._env.get(OVERRIDE_ENV))
        self._info = load_llm_info(self._env)
        self._pool = pool or HttpPool(connection_limit=_connection_limit(self._env.get(CONNECTIONS_ENV)))
        self._models: dict[ResolvedConfig, Model] = {}
        self._by_config: dict[int, tuple[Mapping[str, Any], Model]] = {}

    @property
    def pool(self) -> HttpPool:
        return self._pool

    @property
    def info(self) -> LlmInfo:
        return self._info

    def resolve(self, llm_config: Mapping[str, Any]) -> ResolvedConfig:
        """``llm_config`` resolved as :meth:`create` would (placeholders must be filled)."""
        return resolve_llm_config(apply_override(llm_config, self._override), self._env, self._info)

    def create(self, llm_config: Mapping[str, Any], llm_keys: Mapping[str, Any] | None = None) -> Model:
        """The shared model for ``llm_config`` (after ``AGENT_LLM_OVERRIDE``).

        A config with bring-your-own-key placeholders gets a model of its own, made with
        ``llm_keys`` (the request's ``sly_data.llm_config``) and not kept.

        Every agent invocation asks, with its spec's llm_config: the same read-only object
        each time (specs are frozen; a reload makes new ones). So the answer is kept per
        read-only object (held here, so its id cannot be reused) and resolution runs once
        per spec. A plain dict could change between calls, so it is resolved every time.
        """
        if not isinstance(llm_config, MappingProxyType):
            return self._create(llm_config, llm_keys)
        cached = self._by_config.get(id(llm_config))
        if cached is not None and cached[0] is llm_config:
            return cached[1]
        merged = apply_override(llm_config, self._override)
        if any(placeholder_keys(entry) for entry in fallback_entries(merged)):
            return self._create(llm_config, llm_keys)
        model = self._create(llm_config)
        if len(self._by_config) >= _CONFIG_CACHE_SIZE:  # reloads bring new specs; stay bounded
            self._by_config.clear()
        self._by_config[id(llm_config)] = (llm_config, model)
        return model

    def _create(self, llm_config: Mapping[str, Any], llm_keys: Mapping[str, Any] | None = None) -> Model:
        merged = apply_override(llm_config, self._override)
        if has_fallbacks(merged):
            # Each entry is a whole llm_config of its own (the override laid over it).
            return build_fallbacks(merged, lambda entry: self._create(entry, llm_keys))
        if placeholder_keys(merged):
            merged = fill_placeholders(merged, llm_keys)
            return self._build(resolve_llm_config(merged, self._env, self._info), merged)
        resolved = resolve_llm_config(merged, self._env, self._info)
        model = self._models.get(resolved)
        if model is None:
            model = self._build(resolved, merged)
            self._models[resolved] = model
        return model

    def _build(self, resolved: ResolvedConfig, merged: Mapping[str, Any]) -> Model:
        provider = lookup(resolved.provider)
        if provider is None:  # unregistered since it was resolved
            raise ConfigurationError(f"LLM provider class {resolved.provider!r} is no longer served")
        return provider.build(resolved, merged, self._pool)

    async def aclose(self) -> None:
        """Close the shared HTTP sessions."""
        await self._pool.aclose()
