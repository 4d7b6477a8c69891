"""From an agent's ``llm_config`` to a :class:`~neuro_san.llm.resolved.ResolvedConfig`.

This module picks the provider and reads the keys common to all of them; the provider
(:mod:`~neuro_san.llm.providers`, the registry) knows its vendor's base URL, auth
header, environment variables and own keys, and builds the model for a wire-protocol
adapter (:mod:`~neuro_san.llm.adapters.openai_chat`, :mod:`~neuro_san.llm.adapters.anthropic`…).

Resolution follows neuro-san's ``llm_config`` conventions:

``class``
    one of the registered providers (:mod:`neuro_san.llm.providers`: OpenAI, Azure,
    Ollama and the OpenAI-compatible services in :mod:`~neuro_san.llm.providers.openai`,
    Anthropic, Gemini and Bedrock in :mod:`~neuro_san.llm.providers.native`, ``scripted``
    the offline model of :mod:`neuro_san.llm.adapters.scripted`; each provider's keys are described
    in its module). Without it the provider comes from
    ``model_name`` through the LLM info table (:mod:`neuro_san.llm.llm_info`, extended by
    ``AGENT_LLM_INFO_FILE``), as neuro-san resolves it. An empty ``llm_config`` means
    OpenAI ``gpt-4o``.
``model_name``, ``temperature``, ``max_tokens``
    Passed to the provider (``temperature`` only when set; Anthropic's ``max_tokens``
    defaults to 4096 because the API requires one).
``max_attempts`` (default 3; or neuro-san's ``max_retries`` + 1);
``request_timeout`` / ``timeout``
    Attempts per call and seconds per attempt (default 120).

Other keys (``use_responses_api``, ``verbose``, ``streaming``…) are accepted and ignored,
with one debug log per key. A value set to the string ``"sly_data"`` (neuro-san's
bring-your-own-key) is replaced per request by :mod:`neuro_san.llm.byok` before
resolution; one left over here is a ConfigurationError.

``AGENT_LLM_OVERRIDE`` (env, a JSON object) is overlaid on every llm_config by
:class:`~neuro_san.llm.factory.LlmFactory` (which turns resolved configs into shared
models), so any network can be pointed at a chosen endpoint and model without editing
files, scripted agents included.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm import providers
from neuro_san.llm.llm_info import LlmInfo, default_table
from neuro_san.llm.resolved import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT, Provider, ResolvedConfig
from neuro_san.settings import process_env

logger = logging.getLogger(__name__)

__all__ = ["ResolvedConfig", "provider_of", "resolve_llm_config"]

_DEFAULT_INFO = LlmInfo(default_table())
#: The keys every provider reads; each provider adds its own (``Provider.keys``).
COMMON_KEYS = frozenset(
    {
        "class", "model_name", "temperature", "max_tokens", "max_attempts", "max_retries",
        "request_timeout", "timeout",
    }
)  # fmt: skip
_unknown_keys_logged: set[str] = set()


def resolve_llm_config(
    llm_config: Mapping[str, Any], env: Mapping[str, str] | None = None, info: LlmInfo | None = None
) -> ResolvedConfig:
    """Resolve an (already merged) llm_config against ``env`` (default: the process's settings)
    and the LLM info table ``info`` (default: the built-in one).

    Raises:
        ConfigurationError: no known provider, a missing API key or endpoint, an invalid
            number, or a ``"sly_data"`` key. The message names the key or env var to fix.
    """
    environ: Mapping[str, str] = process_env() if env is None else env
    config = dict(llm_config)
    for key, value in config.items():
        if isinstance(value, str) and value.strip().lower() == "sly_data":
            raise ConfigurationError(f'llm_config key {key!r} is "sly_data" but no request sly_data was given')
    if not is_verbatim(config):
        config = (info or _DEFAULT_INFO).resolve(config)
    provider = provider_for(config)
    name = provider.name
    if provider.verbatim:
        return provider.resolve(name, config, environ, {})
    _log_unknown_keys(config)
    common: dict[str, Any] = {
        "temperature": _number(config, "temperature", float),
        "max_tokens": _number(config, "max_tokens", int),
        "timeout": _timeout(config),
        "max_attempts": _max_attempts(config),
    }
    refusal = provider.refusal(name, config) if provider.refusal else None
    if refusal:
        raise ConfigurationError(refusal)
    return provider.resolve(name, config, environ, common)


def is_verbatim(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` names, by its own name, a provider that takes llm_configs as they
    are (the scripted model): no LLM info table applies to it."""
    name = str(config.get("class") or "").strip().lower()
    provider = providers.lookup(name) if name in providers.provider_names() else None
    return provider is not None and provider.verbatim


def provider_of(config: Mapping[str, Any]) -> str:
    """The provider class of a table-resolved llm_config; ConfigurationError naming the
    model and the class when it is one this server cannot serve."""
    return provider_for(config).name


def provider_for(config: Mapping[str, Any]) -> Provider:
    """The registered provider of a table-resolved llm_config (see :func:`provider_of`)."""
    model_name = str(config.get("model_name") or "")
    served = ", ".join(providers.provider_names())
    # No class and no model: OpenAI's default model, as in neuro-san.
    declared = config.get("class") or ("" if model_name else "openai")
    if declared:
        provider = providers.lookup(str(declared).strip().lower())
        if provider is None:
            raise ConfigurationError(
                f"llm_config for model {model_name or '(none)'!r} names class {declared!r}, which this server "
                f"cannot serve; use one of {served} (any OpenAI-compatible server works as "
                "'openai' with 'openai_api_base')"
            )
        return provider
    raise ConfigurationError(
        f"llm_config 'model_name' {model_name!r} is in no LLM info table and does not say which provider "
        f"serves it; add 'class' ({served}) or an AGENT_LLM_INFO_FILE entry"
    )


def _number(config: Mapping[str, Any], key: str, kind: type[int] | type[float]) -> Any:
    value = config.get(key)
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError(value)
        number = kind(value)
        if kind is int and number != float(value):
            raise ValueError(value)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"llm_config {key!r} must be {'an integer' if kind is int else 'a number'}, got {value!r}"
        ) from None
    if number < 0:
        raise ConfigurationError(f"llm_config {key!r} must not be negative, got {value!r}")
    return number


def _timeout(config: Mapping[str, Any]) -> float:
    key = "request_timeout" if config.get("request_timeout") is not None else "timeout"
    value = _number(config, key, float)
    if value is None:
        return DEFAULT_TIMEOUT
    if value <= 0:
        raise ConfigurationError(f"llm_config {key!r} must be positive, got {value!r}")
    return float(value)


def _max_attempts(config: Mapping[str, Any]) -> int:
    attempts = _number(config, "max_attempts", int)
    if attempts is None:
        retries = _number(config, "max_retries", int)
        return DEFAULT_MAX_ATTEMPTS if retries is None else int(retries) + 1
    if attempts < 1:
        raise ConfigurationError(f"llm_config 'max_attempts' must be at least 1, got {attempts}")
    return int(attempts)


def _log_unknown_keys(config: Mapping[str, Any]) -> None:
    unknown = sorted(set(config) - COMMON_KEYS - providers.provider_keys() - _unknown_keys_logged)
    if unknown:
        _unknown_keys_logged.update(unknown)
        logger.debug("llm_config keys ignored by this server: %s", ", ".join(unknown))
