"""Adding an LLM provider is its registration: a provider registered here (and named
nowhere else) is resolved, checked at load, built and chatted with through the runtime."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.checks import llm_config_problem
from neuro_san.llm.config import resolve_llm_config
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import LlmMessage, Model, ModelResponse, ToolSpec
from neuro_san.llm.providers import lookup, provider_names, register, unregister
from neuro_san.llm.resolved import Provider, ResolvedConfig, first
from tests.support.runtime import make_host, run_chat


class ShoutModel:
    """Answers the last user message in capitals, with the configured suffix."""

    provider = "shouty"

    def __init__(self, model_name: str, suffix: str) -> None:
        self.model_name = model_name
        self._suffix = suffix

    async def complete(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> ModelResponse:
        said = [m.content for m in messages if m.role == "user"][-1]
        return ModelResponse(text=said.upper() + self._suffix, model=self.model_name)


def _resolve(name: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]) -> ResolvedConfig:
    suffix = first(config, "shout_suffix") or env.get("SHOUT_SUFFIX", "")
    if not suffix:
        raise ConfigurationError("shouty needs 'shout_suffix'")
    return ResolvedConfig(provider=name, model_name=first(config, "model_name") or "loud", options=suffix, **common)


def _build(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    return ShoutModel(resolved.model_name, resolved.options)


def _refusal(name: str, config: Mapping[str, Any]) -> str | None:
    return "whispering is not shouting" if config.get("model_name") == "whisper" else None


SHOUTY = Provider("shouty", _resolve, _build, frozenset({"shout_suffix"}), aliases=("loud",), refusal=_refusal)


@pytest.fixture
def shouty() -> Iterator[Provider]:
    register(SHOUTY)
    try:
        yield SHOUTY
    finally:
        unregister(SHOUTY.name)


def _network(llm_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "llm_config": llm_config,
        "tools": [{"name": "shouter", "function": {"description": "Shouts."}, "instructions": "Shout."}],
    }


def test_an_unregistered_class_is_refused_by_name() -> None:
    assert "shouty" not in provider_names()
    problem = llm_config_problem({"class": "shouty"}, env={})
    assert problem is not None and "'shouty'" in problem and "cannot serve" in problem


def test_a_registered_provider_is_resolved_checked_and_chatted_with(shouty: Provider) -> None:
    assert "shouty" in provider_names() and lookup("LOUD".lower()) is shouty
    resolved = resolve_llm_config({"class": "Loud", "model_name": "m1", "temperature": 0.5}, {"SHOUT_SUFFIX": "!"})
    assert (resolved.provider, resolved.model_name, resolved.options) == ("shouty", "m1", "!")
    assert resolved.temperature == 0.5  # the common keys are read for every provider
    assert llm_config_problem({"class": "shouty"}, env={}) is None
    whisper = llm_config_problem({"class": "shouty", "model_name": "whisper"}, env={})
    assert whisper is not None and "whispering is not shouting" in whisper
    with pytest.raises(ConfigurationError, match="whispering"):
        resolve_llm_config({"class": "shouty", "model_name": "whisper", "shout_suffix": "!"}, {})

    host, factory = make_host({"loud": _network({"class": "shouty", "shout_suffix": "!!"})})
    messages = asyncio.run(run_chat(host, "loud", "hello there"))
    assert [m.text for m in messages if m.text] == ["HELLO THERE!!"]
    asyncio.run(factory.aclose())


def test_a_class_is_registered_once(shouty: Provider) -> None:
    with pytest.raises(ValueError, match="registered already"):
        register(Provider("other", _resolve, _build, aliases=("loud",)))
    with pytest.raises(ValueError, match="registered already"):
        register(Provider("openai", _resolve, _build))
    assert "other" not in provider_names()
