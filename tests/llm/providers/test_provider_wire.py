"""Each provider's wire format over real HTTP, through the agent runtime: reasoning state
round trips (DeepSeek, Anthropic thinking, Gemini thought signatures, Bedrock), o1-family
instruction roles, unique tool-call ids, the truncation caveat, SigV4-signed Bedrock
requests, and bring-your-own-key. Replies are provider-shaped bodies
(tests/fakes/provider_bodies.py) served by tests/fakes/provider_fake.py."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.errors import Code
from neuro_san.core.messages import TRUNCATION_CAVEAT, MessageType
from neuro_san.llm.errors import LlmKeyMissing
from tests.fakes import provider_bodies as bodies
from tests.fakes.provider_fake import ProviderFake, Seen
from tests.support.runtime import make_host, run_chat

COUNTER = """
from neuro_san.interfaces.coded_tool import CodedTool

class Counter(CodedTool):
    def invoke(self, args, sly_data):
        return "letters=" + str(len(args.get("word", "")))
"""
AWS = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "eu-west-3")


def network(llm_config: dict[str, Any], **front: Any) -> dict[str, Any]:
    return {
        "llm_config": llm_config,
        "tools": [
            {
                "name": "nerd",
                "function": {"description": "Answers."},
                "instructions": "You answer questions.",
                "tools": ["counter"],
                **front,
            },
            {
                "name": "counter",
                "function": {
                    "description": "Counts letters.",
                    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
                },
                "class": "counter.Counter",
            },
        ],
    }


def chat(
    tmp_path: Path,
    llm_config: dict[str, Any],
    body: Callable[[ProviderFake, Callable[..., Awaitable[Any]]], Awaitable[None]],
    *,
    aws: tuple[str, str, str] | None = None,
    env: dict[str, str] | None = None,
    **front: Any,
) -> None:
    """Run ``body(fake, say)`` where ``say(text, **kw)`` chats with the network."""
    folder = tmp_path / "net"
    folder.mkdir(exist_ok=True)
    (folder / "counter.py").write_text(COUNTER)

    async def main() -> None:
        async with ProviderFake(aws=aws) as fake:
            config = {key: (v.replace("FAKE", fake.url) if isinstance(v, str) else v) for key, v in llm_config.items()}
            host, factory = make_host({"net": network(config, **front)}, tool_roots=[tmp_path], env=env)

            async def say(text: str, **kwargs: Any) -> Any:
                return await run_chat(host, "net", text, **kwargs)

            try:
                await asyncio.wait_for(body(fake, say), 30)
            finally:
                await factory.aclose()

    asyncio.run(main())


def tool_round(first: tuple[int, Any], then: tuple[int, Any]) -> Callable[[Seen], tuple[int, Any]]:
    """First request: ``first``; any request carrying a tool result: ``then``."""

    def rule(seen: Seen) -> tuple[int, Any]:
        raw = seen.raw.decode()
        has_result = any(
            marker in raw for marker in ('"role": "tool"', "tool_result", "functionResponse", "toolResult")
        )
        return then if has_result else first

    return rule


def test_deepseek_reasoning_content_goes_back_with_the_tool_call_turn(tmp_path: Path) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        def deepseek(seen: Seen) -> tuple[int, Any]:
            for index, message in enumerate(seen.body["messages"]):
                if message["role"] == "assistant" and message.get("tool_calls") and "reasoning_content" not in message:
                    # What DeepSeek answers in thinking mode with tools.
                    return 400, bodies.openai_error(
                        f"Missing `reasoning_content` field in the assistant message at message index {index}."
                    )
            return tool_round(
                (
                    200,
                    bodies.chat_completion(
                        tool_calls=[("call_a", "counter", {"word": "abc"})], reasoning_content="I should count."
                    ),
                ),
                (200, bodies.chat_completion("three letters", reasoning_content="Done counting.")),
            )(seen)

        fake.rule = deepseek
        messages = await say("count abc", maximal=True)
        assert messages[-1].text == "three letters"
        second = fake.requests[1].body["messages"]
        assistant = next(m for m in second if m["role"] == "assistant")
        assert assistant["reasoning_content"] == "I should count."
        assert all("I should count" not in (m.text or "") for m in messages), "reasoning shown as answer text"
        assert fake.requests[0].headers["authorization"] == "Bearer sk-deepseek"
        assert fake.requests[0].path == "/chat/completions"

    chat(tmp_path, {"class": "deepseek", "model_name": "deepseek-reasoner", "base_url": "FAKE"}, body,
         env={"DEEPSEEK_API_KEY": "sk-deepseek"})  # fmt: skip


@pytest.mark.parametrize(
    ("model_name", "role"), [("o1-mini", "user"), ("o1", "developer"), ("o3-mini", "developer"), ("gpt-4o", "system")]
)
def test_instruction_role_follows_the_openai_model_family(tmp_path: Path, model_name: str, role: str) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        await say("hi")
        first = fake.requests[0].body["messages"][0]
        assert (first["role"], first["content"]) == (role, "You answer questions.")
        assert not any(m["role"] == "system" for m in fake.requests[0].body["messages"]) or role == "system"

    chat(tmp_path, {"model_name": model_name, "openai_api_base": "FAKE", "openai_api_key": "k"}, body)


def test_generated_tool_call_ids_are_unique_across_rounds(tmp_path: Path) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        def rule(seen: Seen) -> tuple[int, Any]:
            results = sum(1 for m in seen.body["messages"] if m["role"] == "tool")
            if results < 4:  # two rounds of two parallel calls, all with empty ids
                # Empty ids, and a server that numbers its calls per reply.
                calls = [("", "counter", {"word": "ab"}), ("call_0", "counter", {"word": "abc"})]
                return 200, bodies.chat_completion(tool_calls=calls, model="m")
            return 200, bodies.chat_completion("done", model="m")

        fake.rule = rule
        assert (await say("go"))[-1].text == "done"
        last = fake.requests[-1].body["messages"]
        call_ids = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
        result_ids = [m["tool_call_id"] for m in last if m["role"] == "tool"]
        assert len(call_ids) == 4 and len(set(call_ids)) == 4, call_ids
        assert result_ids == call_ids

    chat(tmp_path, {"class": "openai", "model_name": "m", "openai_api_base": "FAKE", "openai_api_key": "k"}, body)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "bedrock"])
def test_a_cut_off_answer_carries_a_caveat_and_a_warning(
    tmp_path: Path, provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    replies = {
        "openai": bodies.chat_completion("The answer is", finish_reason="length", model="m"),
        "anthropic": bodies.anthropic_message("The answer is", stop_reason="max_tokens"),
        "gemini": bodies.gemini_reply("The answer is", finish_reason="MAX_TOKENS"),
        "bedrock": bodies.converse_reply("The answer is", stop_reason="max_tokens"),
    }
    configs = {
        "openai": {"class": "openai", "model_name": "m", "openai_api_base": "FAKE", "openai_api_key": "k"},
        "anthropic": {"model_name": "claude-sonnet-5", "anthropic_api_url": "FAKE", "anthropic_api_key": "k"},
        "gemini": {"model_name": "gemini-2.5-flash", "base_url": "FAKE", "google_api_key": "k"},
        "bedrock": {
            "class": "bedrock", "model_name": "amazon.nova-pro-v1:0", "beta_use_converse_api": True,
            "endpoint_url": "FAKE", "region_name": AWS[2], "aws_access_key_id": AWS[0], "aws_secret_access_key": AWS[1],
        },
    }  # fmt: skip

    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        fake.enqueue((200, replies[provider]))
        with caplog.at_level(logging.WARNING, logger="neuro_san.runtime.agent_loop"):
            messages = await say("q", maximal=True)
        final = messages[-1]
        assert final.text == f"The answer is\n\n{TRUNCATION_CAVEAT}"
        accounting = next(
            m for m in messages if m.type is MessageType.AGENT and m.structure and "caveats" in m.structure
        )
        assert "truncated" in accounting.structure["caveats"][0]
        warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("'nerd'" in w and "output token limit" in w for w in warning), warning

    chat(tmp_path, configs[provider], body, aws=AWS if provider == "bedrock" else None)


def test_gemini_function_calling_both_ways_keeps_the_thought_signature(tmp_path: Path) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        fake.rule = tool_round(
            (200, bodies.gemini_reply(function_call=("counter", {"word": "abcd"}), thought_signature="c2lnLTE=",
                                      thought_summary="Thinking about counting")),
            (200, bodies.gemini_reply("four letters")),
        )  # fmt: skip
        messages = await say("count abcd", maximal=True)
        assert messages[-1].text == "four letters"
        first, second = fake.requests[0], fake.requests[1]
        assert first.path == "/v1beta/models/gemini-3-flash-preview:generateContent"
        assert first.headers["x-goog-api-key"] == "g-key"
        assert first.body["systemInstruction"] == {"parts": [{"text": "You answer questions."}]}
        declaration = first.body["tools"][0]["functionDeclarations"][0]
        assert declaration["name"] == "counter" and declaration["parameters"]["properties"] == {
            "word": {"type": "string"}
        }
        assert first.body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "minimal"}
        model_turn = second.body["contents"][1]
        assert model_turn["role"] == "model"
        call_part = next(p for p in model_turn["parts"] if "functionCall" in p)
        assert call_part == {
            "functionCall": {"name": "counter", "args": {"word": "abcd"}},
            "thoughtSignature": "c2lnLTE=",
        }
        response = second.body["contents"][2]["parts"][0]["functionResponse"]
        assert response == {"name": "counter", "response": {"result": "letters=4"}}
        assert all("Thinking about" not in (m.text or "") for m in messages)

    chat(tmp_path, {"model_name": "gemini-3-flash", "base_url": "FAKE", "thinking_level": "minimal"}, body,
         env={"GOOGLE_API_KEY": "g-key"})  # fmt: skip


def test_anthropic_thinking_blocks_go_back_first_with_their_signatures(tmp_path: Path) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        fake.rule = tool_round(
            (200, bodies.anthropic_message(thinking="Count it.", signature="sig-A", redacted="ENCRYPTED",
                                           tool_use=("toolu_1", "counter", {"word": "ab"}))),
            (200, bodies.anthropic_message("two")),
        )  # fmt: skip
        assert (await say("count ab"))[-1].text == "two"
        assert fake.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assistant = fake.requests[1].body["messages"][1]
        assert assistant["role"] == "assistant"
        assert assistant["content"][:2] == [
            {"type": "thinking", "thinking": "Count it.", "signature": "sig-A"},
            {"type": "redacted_thinking", "data": "ENCRYPTED"},
        ]
        assert assistant["content"][2]["type"] == "tool_use"

    config = {"model_name": "claude-sonnet-5", "anthropic_api_url": "FAKE", "anthropic_api_key": "k",
              "thinking": {"type": "enabled", "budget_tokens": 2048}}  # fmt: skip
    chat(tmp_path, config, body)


@pytest.mark.parametrize("flavour", ["converse", "anthropic-bedrock"])
def test_bedrock_requests_are_sigv4_signed_and_round_trip_tools(tmp_path: Path, flavour: str) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        if flavour == "converse":
            fake.rule = tool_round(
                (200, bodies.converse_reply(tool_use=("tooluse_1", "counter", {"word": "abcde"}),
                                            reasoning=("Counting.", "sig-B"))),
                (200, bodies.converse_reply("five")),
            )  # fmt: skip
        else:
            fake.rule = tool_round(
                (200, bodies.anthropic_message(tool_use=("toolu_9", "counter", {"word": "abcde"}))),
                (200, bodies.anthropic_message("five")),
            )
        assert (await say("count abcde"))[-1].text == "five"
        assert [r.signature_problem for r in fake.requests] == [None, None]
        first, second = fake.requests
        assert first.headers["x-amz-security-token"] == "session-tok"
        if flavour == "converse":
            assert first.path == "/model/amazon.nova-pro-v1:0/converse"
            assert first.raw_path == "/model/amazon.nova-pro-v1%3A0/converse"
            assert first.body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"] == {
                "word": {"type": "string"}
            }
            assistant, results = second.body["messages"][1], second.body["messages"][2]
            assert assistant["content"][0] == {
                "reasoningContent": {"reasoningText": {"text": "Counting.", "signature": "sig-B"}}
            }
            assert results["content"][0]["toolResult"]["toolUseId"] == "tooluse_1"
        else:
            assert first.path == "/model/global.anthropic.claude-sonnet-5-5/invoke"
            assert first.body["anthropic_version"] == "bedrock-2023-05-31" and "model" not in first.body

    if flavour == "converse":
        config: dict[str, Any] = {
            "class": "bedrock",
            "model_name": "amazon.nova-pro-v1:0",
            "beta_use_converse_api": True,
        }
    else:
        config = {"model_name": "bedrock-claude-sonnet"}
    env = {"AWS_ACCESS_KEY_ID": AWS[0], "AWS_SECRET_ACCESS_KEY": AWS[1], "AWS_SESSION_TOKEN": "session-tok",
           "AWS_REGION": AWS[2]}  # fmt: skip
    chat(tmp_path, {**config, "endpoint_url": "FAKE"}, body, aws=AWS, env=env)


def test_a_wrong_secret_fails_the_fakes_signature_check(tmp_path: Path) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        with pytest.raises(Exception) as caught:
            await say("hi")
        assert getattr(caught.value, "code", None) == Code.FAILED_PRECONDITION
        assert "signature" in fake.requests[0].signature_problem

    config = {"model_name": "bedrock-claude-haiku", "endpoint_url": "FAKE", "region_name": AWS[2],
              "aws_access_key_id": AWS[0], "aws_secret_access_key": "not-the-secret"}  # fmt: skip
    chat(tmp_path, config, body, aws=AWS)


def test_byok_key_is_used_for_its_request_only_and_never_leaves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        with caplog.at_level(logging.DEBUG):
            first = await say("one", maximal=True, sly_data={"llm_config": {"openai_api_key": "  sk-user-one  "}})
            second = await say("two", sly_data={"llm_config": {"openai_api_key": "sk-user-two"}})
            with pytest.raises(LlmKeyMissing, match="openai_api_key") as caught:
                await say("three", sly_data={"other": 1})
        assert caught.value.code == Code.INVALID_ARGUMENT
        assert [r.headers["authorization"] for r in fake.requests] == ["Bearer sk-user-one", "Bearer sk-user-two"]
        for message in [*first, *second]:
            shown = repr(message.structure) + repr(message.sly_data) + repr(message.text) + repr(message.chat_context)
            assert "sk-user" not in shown, message
        assert all(b"sk-user" not in r.raw for r in fake.requests)
        assert "sk-user" not in caplog.text

    config = {"model_name": "gpt-5.2", "openai_api_key": "sly_data", "openai_api_base": "FAKE"}
    # allow.to_upstream lists llm_config: neuro-san would send the key back; we never do.
    chat(tmp_path, config, body, allow={"to_upstream": {"sly_data": ["llm_config"]}})


def test_bedrock_takes_credentials_from_the_aws_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No keys in llm_config or env: botocore's chain finds the profile in the shared file."""
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[music]\naws_access_key_id = {AWS[0]}\naws_secret_access_key = {AWS[1]}\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    async def body(fake: ProviderFake, say: Callable[..., Awaitable[Any]]) -> None:
        assert (await say("hello"))[-1].text == "echo: hello"
        assert fake.requests[0].signature_problem is None
        assert "x-amz-security-token" not in fake.requests[0].headers

    config = {"model_name": "bedrock-claude-opus", "endpoint_url": "FAKE", "region_name": AWS[2],
              "credentials_profile_name": "music"}  # fmt: skip
    chat(tmp_path, config, body, aws=AWS)
