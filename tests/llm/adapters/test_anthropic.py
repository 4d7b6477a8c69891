"""Anthropic messages adapter: conversions (system, tool_use/tool_result, alternation)."""

from __future__ import annotations

import pytest

from neuro_san.llm.adapters.anthropic import parse_anthropic_reply, to_anthropic_messages
from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import LlmMessage, ToolCall, ToolSpec, Usage
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm

SEARCH = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})


def test_conversation_conversion_merges_tool_results_and_alternates() -> None:
    calls = (
        ToolCall("toolu_1", "search", {"q": "a"}),
        ToolCall("toolu_2", "search", {"q": "b"}),
    )
    system, messages = to_anthropic_messages(
        [
            LlmMessage("system", "You are helpful."),
            LlmMessage("system", "Be brief."),
            LlmMessage("user", "find a and b"),
            LlmMessage("assistant", "Searching.", tool_calls=calls),
            LlmMessage("tool", "result a", tool_call_id="toolu_1"),
            LlmMessage("tool", "result b", tool_call_id="toolu_2"),
            LlmMessage("user", "and summarise"),
        ]
    )
    assert system == "You are helpful.\n\nBe brief."
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "a"}},
        {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"q": "b"}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "result a"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "result b"},
        {"type": "text", "text": "and summarise"},
    ]


def test_round_trip_over_http() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config("anthropic", temperature=0.5))
        assert model.provider == "anthropic"
        fake.enqueue(
            Reply.calls(
                FakeToolCall("search", {"q": "a"}, id="toolu_x"),
                FakeToolCall("search", {"q": "b"}, id="toolu_y"),
                text="Let me look.",
            )
        )
        conversation = [LlmMessage("system", "sys"), LlmMessage("user", "find a and b")]
        first = await model.complete(conversation, [SEARCH])
        assert first.text == "Let me look."
        assert [(c.id, dict(c.arguments)) for c in first.tool_calls] == [
            ("toolu_x", {"q": "a"}),
            ("toolu_y", {"q": "b"}),
        ]
        request = fake.requests[0]
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == "test-anthropic-key"
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert request.body["system"] == "sys"
        assert request.body["max_tokens"] == 4096
        assert request.body["temperature"] == 0.5
        assert request.body["tools"] == [
            {"name": "search", "description": "Search the web", "input_schema": dict(SEARCH.parameters)}
        ]

        conversation += [
            LlmMessage("assistant", first.text, tool_calls=first.tool_calls),
            LlmMessage("tool", "A!", tool_call_id="toolu_x"),
            LlmMessage("tool", "B!", tool_call_id="toolu_y"),
        ]
        fake.enqueue(Reply.answer("a is A, b is B", usage=(40, 6)))
        second = await model.complete(conversation, [SEARCH])
        assert second.text == "a is A, b is B" and second.tool_calls == ()
        assert second.usage == Usage(40, 6)
        sent = fake.requests[1].body["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert [b["type"] for b in sent[1]["content"]] == ["text", "tool_use", "tool_use"]
        assert [b["tool_use_id"] for b in sent[2]["content"]] == ["toolu_x", "toolu_y"]
        await factory.aclose()

    run_with_fake_llm(body)


def test_max_tokens_from_config() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config("anthropic", max_tokens=123))
        assert (await model.complete([LlmMessage("user", "hi")], [])).text == "hi"
        assert fake.requests[0].body["max_tokens"] == 123
        assert "system" not in fake.requests[0].body and "tools" not in fake.requests[0].body
        await factory.aclose()

    run_with_fake_llm(body)


def test_parse_usage_including_cache_and_non_object_input() -> None:
    reply = {
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "t1", "name": "search", "input": "not an object"},
        ],
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 2},
    }
    response = parse_anthropic_reply(reply, "anthropic", "claude-x")
    assert response.text == "ok" and response.usage == Usage(15, 2)
    (call,) = response.tool_calls
    assert call.arguments == {} and call.arguments_error and call.raw_arguments == '"not an object"'


@pytest.mark.parametrize("reply", [{}, {"content": "text"}, {"content": ["x"]}])
def test_malformed_content(reply: dict) -> None:
    with pytest.raises(LlmMalformedReply):
        parse_anthropic_reply(reply, "anthropic", "m")


def test_base_url_with_v1_is_tolerated() -> None:
    factory = LlmFactory(env={"ANTHROPIC_API_KEY": "k"}, pool=HttpPool())
    model = factory.create({"model_name": "claude-3-5-haiku-latest", "anthropic_api_url": "https://proxy.example/v1"})
    assert model.endpoint.url == "https://proxy.example/v1/messages"  # type: ignore[attr-defined]
