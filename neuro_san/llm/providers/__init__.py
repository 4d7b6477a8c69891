"""The registry of LLM providers: the one place that says which ``llm_config`` classes
this server serves.

Each provider is a :class:`~neuro_san.llm.resolved.Provider`: how it resolves an
llm_config into a :class:`~neuro_san.llm.resolved.ResolvedConfig` and how it builds its
model. The built-in ones are declared next to their resolvers
(:mod:`~neuro_san.llm.providers.openai`, :mod:`~neuro_san.llm.providers.native`, the
offline ``scripted`` model below) and registered here at import; adding a provider to
one of those modules is the whole change. :func:`register` adds one at run time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import Model
from neuro_san.llm.providers import native, openai
from neuro_san.llm.resolved import Provider, ResolvedConfig

_REGISTRY: dict[str, Provider] = {}
_ALIASES: dict[str, str] = {}


def register(provider: Provider) -> None:
    """Serve ``provider``'s class (and its aliases); a name already taken is refused."""
    names = (provider.name, *provider.aliases)
    taken = [name for name in names if name in _REGISTRY or name in _ALIASES]
    if taken:
        raise ValueError(f"LLM provider class {taken[0]!r} is registered already")
    _REGISTRY[provider.name] = provider
    _ALIASES.update(dict.fromkeys(provider.aliases, provider.name))


def unregister(name: str) -> None:
    """Stop serving the class ``name`` (and its aliases)."""
    provider = _REGISTRY.pop(name, None)
    for alias in provider.aliases if provider else ():
        _ALIASES.pop(alias, None)


def lookup(name: str) -> Provider | None:
    """The provider of the class ``name`` or of one of its aliases."""
    return _REGISTRY.get(_ALIASES.get(name, name))


def provider_names() -> tuple[str, ...]:
    """The served classes, in registration order (for messages)."""
    return tuple(_REGISTRY)


def provider_keys() -> frozenset[str]:
    """Every llm_config key some provider reads."""
    return frozenset().union(*(provider.keys for provider in _REGISTRY.values()))


def _resolve_scripted(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    return ResolvedConfig(
        provider=provider,
        model_name=str(config.get("model_name") or "scripted"),
        scripted_config=json.dumps(config, sort_keys=True, default=str),
    )


def _build_scripted(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    # Imported here for start-up time: a server with real LLMs never loads the offline model.
    from neuro_san.llm.adapters.scripted import ScriptedModel

    model: Model = ScriptedModel.from_config(llm_config)
    return model


#: The offline stand-in model (:mod:`neuro_san.llm.adapters.scripted`). Its keys are its script,
#: not ours to judge, so its llm_config is taken as it is.
SCRIPTED = Provider(
    "scripted",
    _resolve_scripted,
    _build_scripted,
    # neuro-san's own test model (its chat_mock_llm_echo network): it only echoes the
    # input, which is what the scripted model does with no tools and no reply template.
    aliases=("neuro_san.test.llms.chat_mock_llm.chatmockllm",),
    verbatim=True,
)

for _provider in (*openai.PROVIDERS, *native.PROVIDERS, SCRIPTED):
    register(_provider)
