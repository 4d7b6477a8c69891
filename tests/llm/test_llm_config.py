"""llm_config resolution: provider choice, keys and env vars, override, errors, caching."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm import config as config_module
from neuro_san.llm.config import ResolvedConfig, resolve_llm_config
from neuro_san.llm.factory import LlmFactory, apply_override
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import Model

KEYS = {"OPENAI_API_KEY": "sk-env-openai", "ANTHROPIC_API_KEY": "sk-ant-env"}


@pytest.mark.parametrize(
    ("model_name", "provider", "sent_as"),
    [
        # neuro-san's table aliases: the dated name is what goes to the provider.
        ("gpt-4o", "openai", "gpt-4o-2024-08-06"),
        ("o1", "openai", "o1-2024-12-17"),
        ("o3-mini", "openai", "o3-mini-2025-01-31"),
        ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5-20250929"),
        # Not in the table: resolved by prefix, sent as written.
        ("gpt-4.1-mini", "openai", "gpt-4.1-mini"),
        ("o4-mini", "openai", "o4-mini"),
        ("chatgpt-4o-latest", "openai", "chatgpt-4o-latest"),
        ("claude-3-5-sonnet-latest", "anthropic", "claude-3-5-sonnet-latest"),
    ],
)
def test_provider_from_model_name(model_name: str, provider: str, sent_as: str) -> None:
    resolved = resolve_llm_config({"model_name": model_name}, KEYS)
    assert (resolved.provider, resolved.model_name) == (provider, sent_as)


@pytest.mark.parametrize("model_name", ["o2-mini", "mistral-large", "ogpt-4"])
def test_unknown_model_name_without_class_names_the_key(model_name: str) -> None:
    with pytest.raises(ConfigurationError, match="'model_name'.*'class'"):
        resolve_llm_config({"model_name": model_name}, KEYS)


def test_class_wins_over_model_name_and_unknown_class_is_rejected() -> None:
    resolved = resolve_llm_config(
        {"class": "openai", "model_name": "claude-lookalike", "openai_api_base": "http://localhost:1/v1"},
        {},
    )
    assert resolved.provider == "openai"
    with pytest.raises(ConfigurationError, match="model 'x-pro' names class 'watsonx'"):
        resolve_llm_config({"class": "watsonx", "model_name": "x-pro"}, KEYS)


def test_openai_defaults_and_env() -> None:
    resolved = resolve_llm_config({}, KEYS)
    assert resolved.provider == "openai" and resolved.model_name == "gpt-4o"
    assert resolved.url == "https://api.openai.com/v1/chat/completions"
    assert dict(resolved.headers) == {"Authorization": "Bearer sk-env-openai"}
    assert resolved.timeout == 120.0 and resolved.max_attempts == 3
    assert resolved.temperature is None and resolved.max_tokens is None
    assert "sk-env-openai" not in repr(resolved)


def test_openai_base_precedence() -> None:
    env = {**KEYS, "OPENAI_API_BASE": "http://env-base:8000/v1/"}
    assert resolve_llm_config({"model_name": "gpt-4o"}, env).base_url == "http://env-base:8000/v1"
    from_base_url = resolve_llm_config({"model_name": "gpt-4o", "base_url": "http://b/v1"}, env)
    assert from_base_url.url == "http://b/v1/chat/completions"
    both = {"model_name": "gpt-4o", "base_url": "http://b/v1", "openai_api_base": "http://a/v1"}
    assert resolve_llm_config(both, env).base_url == "http://a/v1"
    explicit_key = resolve_llm_config({"model_name": "gpt-4o", "openai_api_key": "sk-cfg"}, env)
    assert dict(explicit_key.headers)["Authorization"] == "Bearer sk-cfg"


def test_missing_openai_key_names_the_env_var_unless_local() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        resolve_llm_config({"model_name": "gpt-4o"}, {})
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        resolve_llm_config({"model_name": "gpt-4o", "openai_api_base": "https://vllm.example/v1"}, {})
    local = resolve_llm_config(
        {"class": "openai", "model_name": "qwen", "openai_api_base": "http://127.0.0.1:8000/v1"}, {}
    )
    assert local.headers == ()


def test_anthropic_resolution() -> None:
    resolved = resolve_llm_config({"model_name": "claude-3-5-haiku-latest", "max_tokens": 99}, KEYS)
    assert resolved.url == "https://api.anthropic.com/v1/messages"
    assert dict(resolved.headers) == {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-env"}
    assert resolved.max_tokens == 99
    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://proxy:9000"}
    assert resolve_llm_config({"model_name": "claude-x"}, env).url == "http://proxy:9000/v1/messages"
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        resolve_llm_config({"model_name": "claude-x"}, {"OPENAI_API_KEY": "x"})
    with pytest.raises(ConfigurationError, match="'model_name'"):
        resolve_llm_config({"class": "anthropic"}, KEYS)


def test_ollama_defaults() -> None:
    resolved = resolve_llm_config({"class": "ollama", "model_name": "llama3.1"}, {})
    assert resolved.url == "http://localhost:11434/v1/chat/completions"
    assert resolved.headers == ()
    custom = resolve_llm_config({"class": "ollama", "model_name": "m", "base_url": "http://gpu:11434"}, {})
    assert custom.base_url == "http://gpu:11434/v1"


def test_azure_resolution_from_config_and_errors() -> None:
    resolved = resolve_llm_config(
        {
            "class": "azure-openai",
            "model_name": "gpt-4o",
            "azure_endpoint": "https://me.openai.azure.com/",
            "deployment_name": "dep",
            "openai_api_version": "2025-01-01",
            "openai_api_key": "azkey",
        },
        {},
    )
    assert resolved.url == (
        "https://me.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2025-01-01"
    )
    assert dict(resolved.headers) == {"api-key": "azkey"}
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        resolve_llm_config({"class": "azure-openai", "model_name": "gpt-4o"}, {"AZURE_OPENAI_API_KEY": "k"})
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_API_KEY"):
        resolve_llm_config({"class": "azure-openai", "model_name": "gpt-4o"}, {"AZURE_OPENAI_ENDPOINT": "https://x"})
    token = resolve_llm_config(
        {"class": "azure_openai", "model_name": "gpt-4o"},
        {"AZURE_OPENAI_ENDPOINT": "https://x", "AZURE_OPENAI_AD_TOKEN": "tok"},
    )
    assert dict(token.headers) == {"Authorization": "Bearer tok"}
    # The (table-resolved) model name is the default deployment.
    assert "deployments/gpt-4o-2024-08-06/" in token.url


def test_numbers_attempts_and_timeouts() -> None:
    resolved = resolve_llm_config(
        {"model_name": "gpt-4o", "temperature": "0.3", "max_tokens": 100, "request_timeout": 5},
        KEYS,
    )
    assert (resolved.temperature, resolved.max_tokens, resolved.timeout) == (0.3, 100, 5.0)
    assert resolve_llm_config({"model_name": "gpt-4o", "max_retries": 4}, KEYS).max_attempts == 5
    assert resolve_llm_config({"model_name": "gpt-4o", "max_attempts": 1}, KEYS).max_attempts == 1
    assert resolve_llm_config({"model_name": "gpt-4o", "timeout": 7}, KEYS).timeout == 7.0
    for bad in ({"temperature": "hot"}, {"max_tokens": 1.5}, {"max_attempts": 0}, {"timeout": 0}):
        with pytest.raises(ConfigurationError, match=next(iter(bad))):
            resolve_llm_config({"model_name": "gpt-4o", **bad}, KEYS)


def test_sly_data_keys_are_not_supported_yet() -> None:
    with pytest.raises(ConfigurationError, match="openai_api_key.*sly_data"):
        resolve_llm_config({"model_name": "gpt-4o", "openai_api_key": "sly_data"}, KEYS)


def test_unknown_keys_accepted_with_one_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    config_module._unknown_keys_logged.discard("use_responses_api")
    config_module._unknown_keys_logged.discard("verbose")
    llm_config = {"model_name": "gpt-4o", "use_responses_api": False, "verbose": True}
    with caplog.at_level(logging.DEBUG, logger="neuro_san.llm.config"):
        first = resolve_llm_config(llm_config, KEYS)
        resolve_llm_config(llm_config, KEYS)
    assert first.model_name == "gpt-4o-2024-08-06"
    logs = [r.getMessage() for r in caplog.records if r.name == "neuro_san.llm.config"]
    assert len(logs) == 1 and "use_responses_api" in logs[0] and "verbose" in logs[0]


def test_apply_override_replaces_class_when_it_names_a_model() -> None:
    scripted = {"class": "scripted", "reply": "x", "temperature": 0.1}
    merged = apply_override(scripted, {"model_name": "gpt-4o-mini"})
    assert "class" not in merged and merged["temperature"] == 0.1
    assert apply_override(scripted, {"temperature": 0})["class"] == "scripted"


def test_factory_override_from_env_points_every_network_at_one_endpoint() -> None:
    override = '{"class":"openai","model_name":"llama3.1","openai_api_base":"http://localhost:11434/v1"}'
    factory = LlmFactory(env={"AGENT_LLM_OVERRIDE": override}, pool=HttpPool())
    for llm_config in (
        {"class": "scripted"},
        {"model_name": "claude-3-5-sonnet-latest"},
        {"class": "anthropic", "model_name": "claude-x", "anthropic_api_key": "k"},
        {},
    ):
        model = factory.create(llm_config)
        assert (model.provider, model.model_name) == ("openai", "llama3.1")
        assert model.endpoint.url == "http://localhost:11434/v1/chat/completions"  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_bad_override_is_configuration_error(text: str) -> None:
    with pytest.raises(ConfigurationError, match="AGENT_LLM_OVERRIDE"):
        LlmFactory(env={"AGENT_LLM_OVERRIDE": text})


def test_factory_caches_models_per_resolved_config() -> None:
    factory = LlmFactory(env=KEYS, pool=HttpPool())
    first: Model = factory.create({"model_name": "gpt-4o", "verbose": True})
    assert factory.create({"model_name": "gpt-4o"}) is first  # ignored keys do not matter
    assert factory.create({"model_name": "gpt-4o", "temperature": 0.5}) is not first
    assert factory.pool is factory.create({"model_name": "claude-x"})._pool  # type: ignore[attr-defined]


def test_factory_builds_scripted_model() -> None:
    scripted = pytest.importorskip("neuro_san.llm.adapters.scripted")
    factory = LlmFactory(env={}, pool=HttpPool())
    model = factory.create({"class": "scripted", "reply": "hello {input}"})
    assert isinstance(model, scripted.ScriptedModel)
    assert model.provider == "scripted"
    assert factory.create({"class": "scripted", "reply": "hello {input}"}) is model
    assert factory.create({"class": "scripted", "reply": "bye"}) is not model


def test_resolved_config_is_hashable_and_makes_endpoints() -> None:
    resolved: Any = resolve_llm_config({"model_name": "gpt-4o", "max_attempts": 2}, KEYS)
    assert isinstance(resolved, ResolvedConfig) and hash(resolved)
    endpoint = resolved.endpoint()
    assert endpoint.max_attempts == 2 and endpoint.headers["Authorization"].startswith("Bearer ")
    assert "sk-env-openai" not in repr(endpoint)


def test_neuro_sans_echo_test_model_is_served_as_the_offline_echo(tmp_path: Path) -> None:
    """neuro-san ships chat_mock_llm_echo with its test class ChatMockLlm, which echoes the
    input: the network loads here and answers with what it was told."""
    import asyncio

    from neuro_san.core.messages import ChatRequest
    from neuro_san.network.loader import load_network
    from tests.support.runtime import make_host

    network = tmp_path / "mock.hocon"
    network.write_text(
        '{"llm_config": {"class": "neuro_san.test.llms.chat_mock_llm.ChatMockLlm", "model_name": "echo"},'
        ' "tools": [{"name": "echoer", "function": {"description": "echo"}, "instructions": "Echo."}]}'
    )
    assert load_network(network, "mock").front_man == "echoer"
    document = {
        "llm_config": {"class": "neuro_san.test.llms.chat_mock_llm.ChatMockLlm", "model_name": "echo"},
        "tools": [{"name": "echoer", "function": {"description": "echo"}, "instructions": "Echo."}],
    }
    host, _ = make_host({"mock": document})

    async def chat() -> list[str]:
        return [m.text for m in [m async for m in host.chat("mock", ChatRequest(user_text="hello there"))] if m]

    assert asyncio.run(chat()) == ["hello there"]
