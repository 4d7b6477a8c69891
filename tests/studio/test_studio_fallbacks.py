"""``llm_config.fallbacks`` as neuro-san reads it (``ns init --providers openai,anthropic``
writes a config with nothing else): each entry a whole llm_config, tried in order when a
call fails after its retries, an entry that cannot be built skipped, and never a default
model. The models are real adapters talking to the fake LLM over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.checks import llm_config_problem
from neuro_san.llm.factory import LlmFactory
from tests.fakes.fake_llm import FakeLlmServer, RecordedRequest, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat


def _model_of(request: RecordedRequest) -> str:
    return str(request.body.get("model")) if isinstance(request.body, dict) else ""


def _failing_first(status: int) -> Any:
    def rule(request: RecordedRequest) -> Reply | None:
        if _model_of(request) == "first-model":
            return Reply.error(status, headers={"Retry-After": "0"})
        return Reply.answer(f"second answers: {request.last_input_text()}")

    return rule


def _network(fake: FakeLlmServer, **first_extra: Any) -> dict[str, Any]:
    fallbacks = [
        fake.llm_config(model_name="first-model", max_attempts=2, **first_extra),
        fake.llm_config("anthropic", model_name="second-model"),
    ]
    return {"llm_config": {"fallbacks": fallbacks}, "tools": [{"name": "front", "instructions": "Answer."}]}


@pytest.mark.parametrize("status", [503, 429])
def test_first_model_fails_retryably_and_the_second_answers(status: int) -> None:
    async def body(fake: FakeLlmServer) -> None:
        fake.rule = _failing_first(status)
        host, factory = make_host({"net": _network(fake)}, env={})
        messages = await run_chat(host, "net", "hello")
        await factory.aclose()
        assert messages[-1].text == "second answers: hello"
        # The first model's own retries ran out (2 attempts), then the second (Anthropic) answered.
        assert [(r.protocol, _model_of(r)) for r in fake.requests] == [
            ("openai", "first-model"),
            ("openai", "first-model"),
            ("anthropic", "second-model"),
        ]

    run_with_fake_llm(body)


def test_all_failing_raises_the_last_failure() -> None:
    async def body(fake: FakeLlmServer) -> None:
        fake.rule = lambda request: Reply.error(503, headers={"Retry-After": "0"})
        network = _network(fake)
        network["llm_config"]["fallbacks"][1]["max_attempts"] = 1
        host, factory = make_host({"net": network}, env={})
        with pytest.raises(Exception) as caught:
            await run_chat(host, "net", "hello")
        await factory.aclose()
        assert "503" in str(caught.value) or "unavailable" in str(caught.value).lower()
        assert [_model_of(r) for r in fake.requests] == ["first-model", "first-model", "second-model"]

    run_with_fake_llm(body)


def test_an_entry_without_its_key_is_skipped_and_no_default_model_runs() -> None:
    async def body(fake: FakeLlmServer) -> None:
        # No OPENAI_API_KEY in the environment: gpt-5.2 cannot be built and is skipped, as
        # neuro-san skips an entry whose key is missing.
        fallbacks = [{"model_name": "gpt-5.2"}, fake.llm_config(model_name="second-model")]
        factory = LlmFactory(env={})
        model = factory.create({"fallbacks": fallbacks})
        assert model.model_name == "second-model"
        response = await model.complete([], [])
        assert response.text is not None
        assert [_model_of(r) for r in fake.requests] == ["second-model"]
        # Nothing buildable: neuro-san's words and each entry's reason, never a default model.
        with pytest.raises(ConfigurationError) as caught:
            factory.create({"fallbacks": [{"model_name": "gpt-5.2"}, {"model_name": "claude-sonnet"}]})
        text = str(caught.value)
        assert text.startswith("No fully-specified LLM found in llm_config or fallbacks.")
        assert "fallbacks[0]" in text and "fallbacks[1]" in text
        assert len(fake.requests) == 1
        await factory.aclose()

    run_with_fake_llm(body)


def test_fallbacks_shapes_refused_at_load() -> None:
    assert llm_config_problem({"fallbacks": []}, {}) is not None
    assert "peers" in str(llm_config_problem({"fallbacks": [[{"model_name": "gpt-4o"}]]}, {}))
    beside = llm_config_problem({"fallbacks": [{"model_name": "gpt-4o"}], "temperature": 0.2}, {})
    assert beside is not None and "temperature beside fallbacks" in beside
    unknown = llm_config_problem({"fallbacks": [{"model_name": "gpt-4o"}, {"class": "no-such-provider"}]}, {})
    assert unknown is not None and unknown.startswith("fallbacks[1]: ")
    assert llm_config_problem({"fallbacks": [{"model_name": "gpt-5.2"}, {"model_name": "claude-sonnet"}]}, {}) is None


def test_override_names_a_model_and_replaces_the_fallbacks() -> None:
    factory = LlmFactory(env={"AGENT_LLM_OVERRIDE": '{"class": "scripted"}'})
    model = factory.create({"fallbacks": [{"model_name": "gpt-5.2"}]})
    assert model.provider == "scripted"
