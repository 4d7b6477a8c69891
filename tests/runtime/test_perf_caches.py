"""The per-spec caches and once-per-session work that keep a chat cheap, and that they
never serve stale answers: models per llm_config object, tool schemas per agent spec,
the LLM pool's proxy read once per session, its connection limit."""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Any

import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm import factory as llm_config_module
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.http import DEFAULT_CONNECTION_LIMIT, HttpPool, env_proxy_for
from neuro_san.llm.interface import LlmMessage
from neuro_san.runtime.tool_binding import AgentToolBinder
from tests.fakes.fake_llm import FakeLlmServer, run_with_fake_llm
from tests.support.runtime import make_host, run_chat

LOCAL_KEYS = {"openai_api_base": "http://127.0.0.1:9/v1", "openai_api_key": "k"}


def _counting_resolve(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = llm_config_module.resolve_llm_config

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(llm_config_module, "resolve_llm_config", counting)
    return calls


def test_a_frozen_llm_config_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_resolve(monkeypatch)
    factory = LlmFactory(env={})
    frozen = MappingProxyType({"model_name": "gpt-4o", **LOCAL_KEYS})
    first = factory.create(frozen)
    assert factory.create(frozen) is first
    assert len(calls) == 1
    # An equal but distinct object is resolved (and shares the model, as before).
    assert factory.create(MappingProxyType(dict(frozen))) is first
    assert len(calls) == 2


def test_a_mutable_llm_config_is_resolved_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_resolve(monkeypatch)
    factory = LlmFactory(env={})
    mutable: dict[str, Any] = {"model_name": "gpt-4o", **LOCAL_KEYS}
    first = factory.create(mutable)
    mutable["model_name"] = "gpt-4o-mini"
    second = factory.create(mutable)
    assert second is not first and second.model_name == "gpt-4o-mini-2024-07-18"  # neuro-san's table alias
    assert len(calls) == 2


def test_a_bad_frozen_llm_config_fails_every_time() -> None:
    factory = LlmFactory(env={})
    bad = MappingProxyType({"class": "nonsense"})
    for _ in range(2):
        with pytest.raises(ConfigurationError):
            factory.create(bad)


NETWORK = {
    "llm_config": {"class": "scripted"},
    "tools": [
        {"name": "front", "function": {"description": "front"}, "instructions": "be brief", "tools": ["helper"]},
        {
            "name": "helper",
            "function": {
                "description": "helps",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            },
            "instructions": "help",
        },
    ],
}


def test_tool_schemas_are_built_once_per_agent_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = AgentToolBinder.bind_tools

    async def counting(self: Any, ctx: Any, agent: Any, origin: Any = ()) -> Any:
        calls.append(agent.name)
        return await real(self, ctx, agent, origin)

    monkeypatch.setattr(AgentToolBinder, "bind_tools", counting)

    async def body() -> None:
        host, _ = make_host({"net": NETWORK})
        for _ in range(3):
            assert await run_chat(host, "net", "hello")
        assert calls.count("front") == 1
        # A new spec (what a reload makes) gets its own, freshly built schemas.
        other, _ = make_host({"net": NETWORK})
        assert await run_chat(other, "net", "hello")
        assert calls.count("front") == 2

    asyncio.run(body())


def test_the_environment_proxy_is_read_per_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1,.internal")
    assert env_proxy_for("https://api.openai.com/v1") == "http://proxy.example:3128"
    assert env_proxy_for("https://llm.internal/v1") is None
    assert env_proxy_for("http://127.0.0.1:11434/v1") is None
    assert env_proxy_for("http://api.openai.com/v1") is None  # no HTTP_PROXY set


def test_llm_calls_go_through_the_environment_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake plays the proxy: the configured endpoint does not exist, so the answer
    can only come back through HTTP_PROXY."""
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def body(fake: FakeLlmServer) -> None:
        monkeypatch.setenv("HTTP_PROXY", fake.url)
        factory = LlmFactory(env={})
        unreachable = {"class": "openai", "model_name": "m", "openai_api_base": "http://llm.invalid/v1"}
        model = factory.create({**unreachable, "openai_api_key": "k"})
        reply = await model.complete([LlmMessage("user", "via the proxy")], [])
        assert reply.text == "via the proxy"
        assert fake.requests and fake.requests[-1].headers.get("host") == "llm.invalid"
        await factory.aclose()

    run_with_fake_llm(body)


def test_the_llm_connection_limit_comes_from_the_environment() -> None:
    assert LlmFactory(env={}).pool._connection_limit == DEFAULT_CONNECTION_LIMIT
    assert LlmFactory(env={"AGENT_LLM_MAX_CONNECTIONS": "7"}).pool._connection_limit == 7
    for bad in ("many", "0"):
        with pytest.raises(ConfigurationError, match="AGENT_LLM_MAX_CONNECTIONS"):
            LlmFactory(env={"AGENT_LLM_MAX_CONNECTIONS": bad})
    assert HttpPool()._connection_limit >= 2000  # S5's burst must not queue on the pool
