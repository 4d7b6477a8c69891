"""Parity with neuro-san 0.7.15, message for message: the same MAXIMAL chats, on the same
networks (tests/fixtures/parity), with the same scripted fake LLM over real HTTP
(tests/support/parity_llm.py), against a live neuro-san and against our server.

Opt-in: it needs a Python with neuro-san 0.7.15 installed, named by
``NEURO_SAN_UPSTREAM_PYTHON`` (see tests/client/test_upstream_client.py). The streams are
compared after normalising ids, timings and token counts and the deviations that
docs/compatibility.md lists (tests/support/parity.py says exactly what).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.fake_llm import FakeLlmServer
from tests.support.fake_thread import FakeInThread
from tests.support.parity import PARITY, by_origin, is_upstream_only, maximal_chat, normalise, upstream_server
from tests.support.parity_llm import planned_reply
from tests.support.servers import start_server

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")
pytestmark = [
    pytest.mark.slow,  # starts servers (ours and upstream) when opted in
    pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to compare with neuro-san 0.7.15"),
]


@dataclass
class Pair:
    fake: FakeLlmServer
    upstream: int
    ours: int


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    workdir = tmp_path_factory.mktemp("upstream")
    with FakeInThread(rule=planned_reply) as fake:
        env = {
            "AGENT_TOOL_PATH": str(PARITY / "coded_tools"),
            "OPENAI_API_BASE": fake.openai_base,
            "OPENAI_API_KEY": "sk-parity",
        }
        with upstream_server(UPSTREAM, fake.openai_base, workdir) as upstream_port:
            with start_server(manifest=PARITY / "manifest.hocon", env=env, http=True) as ours:
                yield Pair(fake, upstream_port, ours.http_port)


CASES = {
    "echo": ("parity_echo", "hello there", None),
    "coded_tool": ("parity_coded", "add two and three", None),
    "llm_sub_agent": ("parity_sub", "ask the helper", None),
    "parallel_sub_agents": ("parity_parallel", "go both ways", None),
    "nested_sub_agents": ("parity_nested", "go deep", None),
    "progress_and_sly_data": ("parity_progress", "run the job", {"customer": "ann", "other": 1}),
    "external_network": ("parity_external", "call over there", None),
    "external_network_with_tools_and_sly_data": ("parity_relay", "relay it", None),
}


def _both(pair: Pair, agent: str, text: str, sly_data: Any = None, chat_context: Any = None) -> tuple[
    list[dict[str, Any]], list[dict[str, Any]]
]:
    upstream = maximal_chat(pair.upstream, agent, text, sly_data, chat_context and chat_context[0])
    ours = maximal_chat(pair.ours, agent, text, sly_data, chat_context and chat_context[1])
    kept = [normalise(m, upstream=True) for m in upstream if not is_upstream_only(m)]
    return kept, [normalise(m, upstream=False) for m in ours]


def _assert_same(upstream: list[dict[str, Any]], ours: list[dict[str, Any]], ordered: bool = True) -> None:
    assert upstream and upstream[-1]["type"] == "AGENT_FRAMEWORK", "neuro-san's stream did not finish"
    if not ordered:  # parallel branches interleave as the scheduler runs them, on both servers
        upstream_groups, our_groups = by_origin(upstream), by_origin(ours)
        assert upstream_groups.keys() == our_groups.keys()
        for origin in upstream_groups:
            _assert_in_order(upstream_groups[origin], our_groups[origin])
        return
    _assert_in_order(upstream, ours)


def _assert_in_order(upstream: list[dict[str, Any]], ours: list[dict[str, Any]]) -> None:
    for index, (theirs, mine) in enumerate(zip(upstream, ours, strict=False)):
        difference = f"neuro-san: {json.dumps(theirs)}\nours:      {json.dumps(mine)}"
        assert mine == theirs, f"message {index} differs:\n{difference}"
    assert len(ours) == len(upstream), f"{len(upstream)} messages from neuro-san, {len(ours)} from us"


@pytest.mark.parametrize("case", list(CASES))
def test_same_maximal_stream(pair: Pair, case: str) -> None:
    agent, text, sly_data = CASES[case]
    upstream, ours = _both(pair, agent, text, sly_data)
    _assert_same(upstream, ours, ordered=case != "parallel_sub_agents")


@pytest.mark.parametrize("case", list(CASES))
def test_same_minimal_answer(pair: Pair, case: str) -> None:
    agent, text, sly_data = CASES[case]
    upstream = maximal_chat(pair.upstream, agent, text, sly_data, chat_filter="MINIMAL")
    ours = maximal_chat(pair.ours, agent, text, sly_data, chat_filter="MINIMAL")
    assert len(upstream) == len(ours) == 1
    assert normalise(ours[0], upstream=False) == normalise(upstream[0], upstream=True)


def test_next_turn_carries_the_same_history(pair: Pair) -> None:
    """chat_context round trip: the second turn's stream and what the LLM is sent."""
    contexts = (
        maximal_chat(pair.upstream, "parity_coded", "add two and three")[-1]["chat_context"],
        maximal_chat(pair.ours, "parity_coded", "add two and three")[-1]["chat_context"],
    )
    seen = len(pair.fake.requests)
    second = maximal_chat(pair.upstream, "parity_coded", "again", None, contexts[0])
    upstream = [normalise(m, upstream=True) for m in second]
    upstream_requests = pair.fake.requests[seen:]
    seen = len(pair.fake.requests)
    second = maximal_chat(pair.ours, "parity_coded", "again", None, contexts[1])
    ours = [normalise(m, upstream=False) for m in second]
    our_requests = pair.fake.requests[seen:]
    _assert_same(upstream, ours)
    first_upstream, first_ours = upstream_requests[0].messages, our_requests[0].messages
    assert _conversation(first_ours) == _conversation(first_upstream)


def _conversation(messages: list[Any]) -> list[tuple[str, str]]:
    """The (role, text) of the messages an LLM request carried, tool calls aside."""
    return [(m.get("role"), m.get("content") or "") for m in messages if isinstance(m, dict)]
