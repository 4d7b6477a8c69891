"""Bring-your-own-key: llm_config values taken from the request's sly_data.

As in neuro-san (``music_nerd_pro_sly_api_key``), any llm_config value that reads
``"sly_data"`` (any case, surrounding blanks ignored) is a placeholder: the request
supplies the value under the same key in ``sly_data.llm_config``, e.g.
``{"llm_config": {"openai_api_key": "sk-…"}}``.

Where we do better than neuro-san: a network that uses placeholders has its request's
``sly_data.llm_config`` *taken out* of sly_data when the request starts
(:func:`take_llm_keys`). The values then live only in the request context and in the
headers of that request's LLM calls: never in a log, never in the final message's
sly_data (whatever ``allow.to_upstream`` says), never forwarded to another agent or
network, never seen by coded tools, and never echoed (neuro-san echoes the key back in
MAXIMAL's request echo). Models built with such keys are not cached across requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from neuro_san.llm.errors import LlmKeyMissing

PLACEHOLDER = "sly_data"
SLY_DATA_KEY = "llm_config"


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == PLACEHOLDER


def placeholder_keys(llm_config: Mapping[str, Any]) -> list[str]:
    """The llm_config keys whose value comes from the request's sly_data."""
    return [key for key, value in llm_config.items() if is_placeholder(value)]


def take_llm_keys(llm_configs: Iterable[Mapping[str, Any]], sly_data: dict[str, Any]) -> dict[str, Any]:
    """Remove and return ``sly_data["llm_config"]`` when any of ``llm_configs`` has a
    placeholder (otherwise sly_data is left alone: it may be a coded tool's data)."""
    if not any(placeholder_keys(entry) for config in llm_configs for entry in _layers(config)):
        return {}
    values = sly_data.get(SLY_DATA_KEY)
    if not isinstance(values, Mapping):
        return {}
    del sly_data[SLY_DATA_KEY]
    return dict(values)


def fill_placeholders(llm_config: Mapping[str, Any], llm_keys: Mapping[str, Any] | None) -> dict[str, Any]:
    """``llm_config`` with each placeholder replaced by the request's value (strings are
    stripped); LlmKeyMissing names the keys the request did not give (never a value)."""
    given = llm_keys or {}
    filled = dict(llm_config)
    missing = []
    for key in placeholder_keys(llm_config):
        value = given.get(key)
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "":
            missing.append(key)
        else:
            filled[key] = value
    if missing:
        raise LlmKeyMissing(
            "this agent's LLM needs these values in the request's sly_data.llm_config: " + ", ".join(missing)
        )
    return filled


def _layers(llm_config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The config and its ``fallbacks`` entries (each may hold placeholders)."""
    nested = llm_config.get("fallbacks")
    extra = [entry for entry in nested if isinstance(entry, Mapping)] if isinstance(nested, list) else []
    return [llm_config, *extra]
