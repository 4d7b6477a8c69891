"""Load-time checks of llm_configs: a provider this server cannot serve is refused when
the network loads, naming the model and the class, not at chat time.

Only what does not depend on the request or on secrets is checked here (the provider
class, the provider's own refusals such as Bedrock's prerequisites); keys may come from
the environment at chat time or from the request's sly_data (bring-your-own-key).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.byok import placeholder_keys
from neuro_san.llm.config import is_verbatim, provider_for
from neuro_san.llm.factory import OVERRIDE_ENV, apply_override, parse_override
from neuro_san.llm.fallbacks import entries as fallback_entries
from neuro_san.llm.fallbacks import fallbacks_problem, has_fallbacks
from neuro_san.llm.llm_info import INFO_FILE_ENV, LlmInfo, load_llm_info
from neuro_san.settings import process_env

_INFO_CACHE: dict[str, LlmInfo] = {}


def _info(env: Mapping[str, str]) -> LlmInfo:
    path = env.get(INFO_FILE_ENV, "")
    if path not in _INFO_CACHE:
        _INFO_CACHE[path] = load_llm_info(env)
    return _INFO_CACHE[path]


def llm_config_problem(llm_config: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str | None:
    """Why the model this llm_config names cannot be served here, or None."""
    environ = process_env() if env is None else env
    try:
        merged = apply_override(llm_config, parse_override(environ.get(OVERRIDE_ENV)))
    except ConfigurationError as error:
        return error.message
    if has_fallbacks(merged):
        # Every entry must be servable: neuro-san would use the one we could not.
        problem = fallbacks_problem(merged)
        if problem:
            return problem
        for index, entry in enumerate(fallback_entries(merged)):
            problem = llm_config_problem(entry, environ)
            if problem:
                return f"fallbacks[{index}]: {problem}"
        return None
    try:
        if is_verbatim(merged):  # the scripted model: its config is its own
            return None
        # Placeholders are filled per request; their values do not decide the provider.
        config = {k: v for k, v in merged.items() if k not in placeholder_keys(merged)}
        info = _info(environ)
        resolved = info.resolve(config)
        provider = provider_for(resolved)
    except ConfigurationError as error:
        return error.message + _closest_models(merged, environ)
    refusal = provider.refusal(provider.name, resolved) if provider.refusal else None
    if refusal:
        return f"model {resolved.get('model_name')!r} of class {provider.name!r}: {refusal}"
    return None


def _closest_models(llm_config: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """``; closest known: …`` for a model name no table knows (a typo, mostly)."""
    name = llm_config.get("model_name")
    if not isinstance(name, str) or not name:
        return ""
    table = _info(env).table
    if name in table:
        return ""
    known = sorted(key for key in table if key not in ("classes", "default_config"))
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f"; closest known: {', '.join(repr(c) for c in close)}" if close else ""
