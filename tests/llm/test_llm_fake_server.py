"""The fake LLM server itself: rules, recording, and running it as a separate process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import LlmMessage, ToolSpec
from tests.fakes.fake_llm import FakeLlmServer, Reply, echo_rule, run_with_fake_llm, tool_then_answer_rule

REPO = Path(__file__).resolve().parents[2]
LOOKUP = ToolSpec("lookup", "Look it up", {"type": "object", "properties": {"q": {"type": "string"}}})


def test_tool_then_answer_rule_drives_a_two_turn_loop() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        for protocol in ("openai", "anthropic"):
            model = factory.create(fake.llm_config(protocol))
            first = await model.complete([LlmMessage("user", "find x")], [LOOKUP])
            (call,) = first.tool_calls
            assert (call.name, dict(call.arguments)) == ("lookup", {"q": "x"})
            second = await model.complete(
                [
                    LlmMessage("user", "find x"),
                    LlmMessage("assistant", "", tool_calls=first.tool_calls),
                    LlmMessage("tool", "x is 42", tool_call_id=call.id),
                ],
                [LOOKUP],
            )
            assert second.text == "x is 42" and second.tool_calls == ()
        assert [r.protocol for r in fake.requests] == ["openai", "openai", "anthropic", "anthropic"]
        await factory.aclose()

    run_with_fake_llm(body, rule=tool_then_answer_rule("lookup", {"q": "x"}))


def test_queue_wins_over_rule_and_rule_over_echo() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config())
        fake.enqueue(Reply.answer("queued"))
        assert (await model.complete([LlmMessage("user", "a")], [])).text == "queued"
        assert (await model.complete([LlmMessage("user", "b")], [])).text == "ruled: b"
        await factory.aclose()

    run_with_fake_llm(body, rule=echo_rule("ruled: "))


def test_a_held_reply_answers_only_when_released_and_release_rearms() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config())
        for text in ("first", "second"):  # the second hold waits for a second release
            fake.enqueue(Reply.hold(Reply.answer("released " + text)))
            call = asyncio.create_task(model.complete([LlmMessage("user", text)], []))
            assert await fake.wait_for(lambda: fake.held == 1, within=10.0)
            await asyncio.sleep(0.05)  # the behaviour under test: a chance to answer, which a hold must not take
            assert not call.done() and fake.answered == ("first", "second").index(text)
            fake.release()
            assert (await call).text == "released " + text
            assert fake.held == 0
        await factory.aclose()

    run_with_fake_llm(body)


def test_latency_is_applied() -> None:
    async def body(fake: FakeLlmServer) -> None:
        factory = LlmFactory(env={}, pool=HttpPool())
        model = factory.create(fake.llm_config())
        loop = asyncio.get_running_loop()
        started = loop.time()
        await model.complete([LlmMessage("user", "slow")], [])
        assert loop.time() - started >= 0.15
        await factory.aclose()

    run_with_fake_llm(body, latency_ms=150)


@pytest.mark.slow
def test_runs_as_a_separate_process() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.fake_llm", "--port", "0", "--latency-ms", "1"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert "listening on http://127.0.0.1:" in banner
        url = banner.split("listening on ")[1].split()[0]

        async def call() -> str:
            factory = LlmFactory(env={}, pool=HttpPool())
            model = factory.create({"class": "openai", "model_name": "m", "openai_api_base": f"{url}/v1"})
            response = await model.complete([LlmMessage("user", "from a process")], [])
            await factory.aclose()
            return response.text

        assert asyncio.run(asyncio.wait_for(call(), 10)) == "from a process"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
