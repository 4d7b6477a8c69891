"""OpenAI chat completions adapter: request shape and reply parsing, over HTTP to the fake."""

from __future__ import annotations

import json

import pytest

from neuro_san.llm.adapters.openai_chat import parse_openai_reply, parse_tool_arguments, to_openai_messages
from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import LlmMessage, ToolCall, ToolSpec, Usage
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm

WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec("get_time", "Time in a city", {"type": "object", "properties": {}})


def test_text_answer_and_request_shape() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config(temperature=0.2, max_tokens=50))
        assert model.provider == "openai" and model.model_name == "fake-model"
        fake.enqueue(Reply.answer("Paris it is", usage=(12, 3)))
        response = await model.complete(
            [LlmMessage("system", "be brief"), LlmMessage("user", "capital of France?")], []
        )
        assert response.text == "Paris it is"
        assert response.tool_calls == ()
        assert response.usage == Usage(12, 3) and response.usage.total_tokens == 15
        assert response.model == "fake-model"
        request = fake.requests[0]
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer test-openai-key"
        assert request.body == {
            "model": "fake-model",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "capital of France?"},
            ],
            "stream": False,
            "temperature": 0.2,
            "max_tokens": 50,
        }  # no "tools" key when there are none
        await factory.aclose()

    run_with_fake_llm(body)


def test_two_parallel_tool_calls_parsed_and_tools_sent() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config())
        fake.enqueue(
            Reply.calls(
                FakeToolCall("get_weather", {"city": "Paris"}, id="call_a"),
                FakeToolCall("get_time", {}, id="call_b"),
            )
        )
        response = await model.complete([LlmMessage("user", "weather and time?")], [WEATHER, TIME])
        assert response.text == ""
        assert [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls] == [
            ("call_a", "get_weather", {"city": "Paris"}),
            ("call_b", "get_time", {}),
        ]
        assert all(c.arguments_error is None for c in response.tool_calls)
        sent_tools = fake.requests[0].body["tools"]
        assert sent_tools[0] == {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": dict(WEATHER.parameters),
            },
        }
        assert "temperature" not in fake.requests[0].body
        await factory.aclose()

    run_with_fake_llm(body)


def test_malformed_tool_arguments_keep_raw_and_set_error() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config())
        fake.enqueue(
            Reply.calls(
                FakeToolCall("get_weather", '{"city": "Par'),
                FakeToolCall("get_weather", '["Paris"]'),
            )
        )
        response = await model.complete([LlmMessage("user", "weather?")], [WEATHER])
        broken, array = response.tool_calls
        assert broken.arguments == {} and broken.raw_arguments == '{"city": "Par'
        assert broken.arguments_error and "not valid JSON" in broken.arguments_error
        assert array.arguments == {} and array.raw_arguments == '["Paris"]'
        assert array.arguments_error and "JSON object" in array.arguments_error
        await factory.aclose()

    run_with_fake_llm(body)


def test_tool_round_trip_history_shape() -> None:
    call = ToolCall("call_1", "get_weather", {"city": "Oslo"}, '{"city": "Oslo"}')
    bad = ToolCall("call_2", "get_weather", {}, "{oops", "not valid JSON")
    converted = to_openai_messages(
        [
            LlmMessage("user", "weather in Oslo?"),
            LlmMessage("assistant", "", tool_calls=(call, bad)),
            LlmMessage("tool", "rainy", tool_call_id="call_1"),
            LlmMessage("tool", "error: bad arguments", tool_call_id="call_2"),
        ]
    )
    assert converted[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
        ],
    }
    assert converted[2] == {"role": "tool", "tool_call_id": "call_1", "content": "rainy"}
    assert converted[3]["tool_call_id"] == "call_2"


def test_echo_default_answers_with_last_tool_result_over_http() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config())
        call = ToolCall("call_1", "get_weather", {"city": "Oslo"})
        response = await model.complete(
            [
                LlmMessage("user", "weather in Oslo?"),
                LlmMessage("assistant", "", tool_calls=(call,)),
                LlmMessage("tool", "rainy", tool_call_id="call_1"),
            ],
            [WEATHER],
        )
        assert response.text == "rainy"
        sent = fake.requests[0].body["messages"]
        assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
        await factory.aclose()

    run_with_fake_llm(body)


@pytest.mark.parametrize(
    "reply",
    [{}, {"choices": []}, {"choices": [{"index": 0}]}, {"choices": ["x"]}],
)
def test_missing_choices_or_message_is_malformed(reply: dict) -> None:
    with pytest.raises(LlmMalformedReply):
        parse_openai_reply(reply, "openai", "m")


def test_tool_call_without_function_name_is_malformed() -> None:
    reply = {"choices": [{"message": {"tool_calls": [{"id": "x", "function": {}}]}}]}
    with pytest.raises(LlmMalformedReply, match="no function name"):
        parse_openai_reply(reply, "openai", "m")


def test_parse_tool_arguments_variants() -> None:
    assert parse_tool_arguments('{"a": 1}') == ({"a": 1}, '{"a": 1}', None)
    assert parse_tool_arguments("") == ({}, "", None)
    assert parse_tool_arguments(None) == ({}, "", None)
    assert parse_tool_arguments({"a": 1})[0] == {"a": 1}  # some servers send the object
    arguments, raw, error = parse_tool_arguments("42")
    assert arguments == {} and raw == "42" and error is not None


def test_content_parts_usage_missing_and_model_fallback() -> None:
    reply = {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"text": "b"}]}}]}
    response = parse_openai_reply(reply, "openai", "fallback")
    assert response.text == "ab" and response.usage == Usage() and response.model == "fallback"


def test_azure_path_query_and_api_key_header() -> None:
    async def body(fake: FakeLlmServer) -> None:
        env = {
            "AZURE_OPENAI_API_KEY": "azure-key",
            "AZURE_OPENAI_ENDPOINT": fake.url,
            "AZURE_OPENAI_DEPLOYMENT_NAME": "my-deployment",
            "OPENAI_API_VERSION": "2024-06-01",
        }
        factory = LlmFactory(env=env, pool=HttpPool())
        model = factory.create({"class": "azure-openai", "model_name": "gpt-4o"})
        assert model.provider == "azure-openai"
        assert (await model.complete([LlmMessage("user", "hi azure")], [])).text == "hi azure"
        request = fake.requests[0]
        assert request.path == "/openai/deployments/my-deployment/chat/completions"
        assert request.query == {"api-version": "2024-06-01"}
        assert request.headers["api-key"] == "azure-key"
        assert "authorization" not in request.headers
        await factory.aclose()

    run_with_fake_llm(body)


def test_ollama_style_local_endpoint_needs_no_key() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create({"class": "ollama", "model_name": "llama3.1", "base_url": fake.url})
        assert model.provider == "ollama"
        assert (await model.complete([LlmMessage("user", "local")], [])).text == "local"
        assert fake.requests[0].path == "/v1/chat/completions"
        assert "authorization" not in fake.requests[0].headers
        await factory.aclose()

    run_with_fake_llm(body)


def test_reasoning_models_get_max_completion_tokens_and_no_temperature() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        for model_name, reasoning in (("o3-mini", True), ("gpt-5", True), ("gpt-4o", False)):
            model = factory.create(fake.llm_config(model_name=model_name, temperature=0.3, max_tokens=64))
            await model.complete([LlmMessage("user", "think")], [])
            sent = fake.requests[-1].body
            if reasoning:
                assert sent["max_completion_tokens"] == 64 and "max_tokens" not in sent
                assert "temperature" not in sent
            else:
                assert sent["max_tokens"] == 64 and sent["temperature"] == 0.3
        # A local Ollama model that happens to share a name keeps the plain parameters.
        local = factory.create({"class": "ollama", "model_name": "o1", "base_url": fake.url, "max_tokens": 8})
        await local.complete([LlmMessage("user", "hi")], [])
        assert fake.requests[-1].body["max_tokens"] == 8
        await factory.aclose()

    run_with_fake_llm(body)
