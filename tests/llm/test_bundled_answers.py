"""The bundled networks answer like a polite small model (issue 34, item 1).

Each bundled network answers each of its sample queries, and "hello", with no
"scripted", no "Error", none of its agents' instructions or commands and none of the
``The <name> is '<value>'.`` argument sentences a sub-agent is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from neuro_san.core.messages import MessageType
from neuro_san.llm.factory import LlmFactory
from neuro_san.network.files import read_document
from neuro_san.network.loader import load_network
from neuro_san.network.manifest import parse_manifest
from neuro_san.network.spec import NetworkSpec
from neuro_san.runtime.coded_tools import CodedToolResolver
from neuro_san.runtime.network_runner import NetworkRunner
from tests.support.runtime import run_chat

PACKAGE = Path(__file__).resolve().parents[2] / "neuro_san"
MANIFEST = PACKAGE / "registries" / "manifest.hocon"


class _Bundled:
    def __init__(self) -> None:
        manifest = parse_manifest(read_document(MANIFEST), MANIFEST)
        self._networks = {
            e.name: load_network(e.path, e.name, e.public) for e in manifest.entries.values() if e.serve
        }

    def get(self, name: str) -> NetworkSpec | None:
        return self._networks.get(name)

    def networks(self) -> Mapping[str, NetworkSpec]:
        return self._networks


BUNDLED = _Bundled()
CASES = [
    (name, query)
    for name, spec in sorted(BUNDLED.networks().items())
    for query in [*((spec.metadata or {}).get("sample_queries") or ()), "hello"]
]


def test_every_public_bundled_network_has_sample_queries() -> None:
    for name, spec in BUNDLED.networks().items():
        assert (spec.metadata or {}).get("sample_queries"), f"{name} shows no sample query in the playground"


@pytest.mark.parametrize(("network", "query"), CASES, ids=[f"{n}:{q}" for n, q in CASES])
def test_bundled_answer_reads_like_an_answer(network: str, query: str) -> None:
    host = NetworkRunner(BUNDLED, LlmFactory(env={}), CodedToolResolver([PACKAGE / "coded_tools"]))
    messages = asyncio.run(run_chat(host, network, query))
    [answer] = [m.text for m in messages if m.type == MessageType.AGENT_FRAMEWORK]
    assert answer and answer.strip()
    assert "scripted" not in answer.lower() and "error" not in answer.lower(), answer
    assert " is '" not in answer, answer  # a sub-agent's argument sentence
    for agent in BUNDLED.networks()[network].agents.values():
        for text in (agent.instructions, agent.command):
            assert not text or text not in answer, answer


def test_known_answers() -> None:
    host = NetworkRunner(BUNDLED, LlmFactory(env={}), CodedToolResolver([PACKAGE / "coded_tools"]))

    def answer(network: str, query: str) -> str:
        messages = asyncio.run(run_chat(host, network, query))
        return next(m.text for m in messages if m.type == MessageType.AGENT_FRAMEWORK)

    assert answer("hello_world", "hello world") == "Announcement: Greetings, planet!"
    assert answer("math_guy", "hello") == "I only do arithmetic: ask me, for example, 2 * (3 + 4)."
    assert answer("math_guy", "What is 6 * 7?") == "The answer is 42."
    assert answer("math_guy_passthrough", "hello").startswith("math_guy says: I only do arithmetic")
