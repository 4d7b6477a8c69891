"""neuro-san 0.7.15 keys that change behaviour: refused at load with the key path and a
reason when not implemented (never accepted and ignored), and event invocation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from neuro_san.network.errors import NetworkLoadError
from tests.fakes.fake_llm import FakeLlmServer, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat


def _document(front: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {**top, "tools": [{"name": "front", "instructions": "x", **(front or {})}]}


@pytest.mark.parametrize(
    ("document", "key_path", "reason"),
    [
        (_document(error_formatter="json"), "error_formatter", "is not supported"),
        (_document(error_fragments=["oops"]), "error_fragments", "not supported"),
        (_document({"error_formatter": "json"}), "tools[0].error_formatter", "is not supported"),
        (_document(llm_info_file="llm_info.hocon"), "llm_info_file", "not supported"),
        (_document({"max_execution_seconds": 5}), "tools[0].max_execution_seconds", "set it at the top level"),
        (_document({"max_attempts": 2}), "tools[0].max_attempts", "set it at the top level"),
        (
            _document({"function": {"description": "d", "invocation": "later"}}),
            "tools[0].function.invocation",
            "invocation 'later' is unknown",
        ),
        (
            _document({"function": {"description": "d", "invocation": {"invocation_type": 3}}}),
            "tools[0].function.invocation",
            "invocation 3 is unknown",
        ),
        (_document({"allow": {"reservations": True}}), "tools[0].allow.reservations", "reservations"),
    ],
)
def test_behaviour_changing_keys_are_refused(document: dict[str, Any], key_path: str, reason: str) -> None:
    with pytest.raises(NetworkLoadError) as caught:
        build_network(document, "net.hocon", "net")
    assert caught.value.file == "net.hocon"
    assert caught.value.key_path == key_path and reason in caught.value.reason


def test_keys_that_change_nothing_observable_are_accepted() -> None:
    document = _document(
        {"verbose": True, "function": {"description": "d", "invocation": "chatbot"},
         "allow": {"to_tracing": {"sly_data": ["x"]}, "reservations": False}, "structure_formats": "json"},
        verbose="extra", error_formatter="string", error_fragments=[],
    )  # fmt: skip
    spec = build_network(document, "net.hocon", "net")
    assert spec.front.structure_formats == ("json",)


def test_event_invocation_acknowledges_at_once_and_works_in_the_background() -> None:
    async def body(fake: FakeLlmServer) -> None:
        function = {"description": "d", "invocation": {"invocation_type": "event"}}
        front = {"name": "front", "instructions": "x", "function": function}
        host, factory = make_host({"net": {"llm_config": fake.llm_config(), "tools": [front]}})
        fake.enqueue(Reply.stall(0.5, Reply.answer("worked")))
        started = time.monotonic()
        [ack] = await run_chat(host, "net", "do it")
        assert (ack.type, ack.text) == (MessageType.AGENT_FRAMEWORK, "Event acknowledged")
        assert time.monotonic() - started < 0.4
        assert await fake.wait_for(lambda: fake.request_count == 1, 2.0)
        # MAXIMAL is an ordinary chat.
        messages = await run_chat(host, "net", "again", maximal=True)
        assert messages[-1].text == "again"
        await asyncio.sleep(0.6)  # let the background work finish before the fake stops
        await factory.aclose()

    run_with_fake_llm(body)
