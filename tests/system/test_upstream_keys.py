"""neuro-san 0.7.15 keys that change behaviour: refused at load with the key path and a
reason when not implemented (never accepted and ignored), and event invocation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from tests.fakes.fake_llm import FakeLlmServer, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat


def _document(front: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {**top, "tools": [{"name": "front", "instructions": "x", **(front or {})}]}


@pytest.mark.parametrize(
    ("document", "key_path", "reason"),
    [
        # error_formatter / error_fragments are implemented (issue 23); only bad values are refused.
        (_document(error_formatter="yaml"), "error_formatter", "must be 'string' or 'json'"),
        (_document(error_fragments="oops"), "error_fragments", "must be a list of non-empty strings"),
        (_document({"error_formatter": 3}), "tools[0].error_formatter", "must be 'string' or 'json'"),
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
        # The LLM answers only when released: an ack that waited for the work could not come.
        fake.enqueue(Reply.hold(Reply.answer("worked"), seconds=20))
        before = asyncio.all_tasks()
        [ack] = await run_chat(host, "net", "do it")
        background = asyncio.all_tasks() - before  # the work the ack left running
        assert (ack.type, ack.text) == (MessageType.AGENT_FRAMEWORK, "Event acknowledged")
        assert fake.answered == 0 and background
        # The work goes on: its LLM call arrives and waits on the fake...
        assert await fake.wait_for(lambda: fake.held == 1, 10.0)
        assert not any(task.done() for task in background)
        # ...meanwhile, MAXIMAL is an ordinary chat.
        messages = await run_chat(host, "net", "again", maximal=True)
        assert messages[-1].text == "again"
        fake.release()
        done, pending = await asyncio.wait(background, timeout=10.0)
        assert not pending
        assert [task.result().text for task in done] == ["worked"]
        assert fake.answered == 2
        await factory.aclose()

    run_with_fake_llm(body)
