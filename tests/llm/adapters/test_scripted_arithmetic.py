"""The offline scripted model passes on the arithmetic it finds in a question, so the
bundled ``math_guy`` demo answers a follow-up such as "and 6 * 8?" (it used to hand the
whole sentence to the calculator: "Error: invalid syntax")."""

from __future__ import annotations

import asyncio

import pytest

from neuro_san.client import AsyncAgentClient
from neuro_san.llm.adapters.scripted import arithmetic_in
from tests.support.servers import ServerProcess


@pytest.mark.parametrize(
    ("text", "arithmetic"),
    [
        ("6 * 7", "6 * 7"),
        ("and 6 * 8?", "6 * 8"),
        ("What is (2+3)*4?", "(2+3)*4"),
        ("(6 * 7)", "(6 * 7)"),
        ("is 6*7.", "6*7"),
        ("-3 + 4?", "-3 + 4"),
        ("The expression is '2 * (3 + 4)'.", "2 * (3 + 4)"),
        ("hello", "hello"),  # no number: the text as it is, for the tool to refuse
    ],
)
def test_the_arithmetic_of_a_question(text: str, arithmetic: str) -> None:
    assert arithmetic_in(text) == arithmetic


def _talk(server: ServerProcess, agent: str, *questions: str) -> list[str]:
    async def main() -> list[str]:
        async with AsyncAgentClient.grpc(server.grpc_target) as client:
            conversation = client.conversation(agent)
            answers = []
            for question in questions:
                answers.append((await asyncio.wait_for(conversation.send(question), 30)).text)
            return answers

    return asyncio.run(main())


@pytest.mark.slow
def test_math_guy_answers_the_follow_up(server: ServerProcess) -> None:
    assert _talk(server, "math_guy", "6 * 7", "and 6 * 8?") == ["The answer is 42.", "The answer is 48."]


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["deep/math_guy", "math_guy_passthrough"])
def test_the_other_bundled_arithmetic_networks_find_it_too(server: ServerProcess, agent: str) -> None:
    [answer] = _talk(server, agent, "and what is 2 * (3 + 4)?")
    assert "The answer is 14." in answer
    [refused] = _talk(server, agent, "hello")
    assert "I only do arithmetic" in refused and "Error" not in refused
