"""Reservations (temporary networks): NetworkCopyMiddleware and coded tools with
``allow.reservations``, against the fake LLM over real HTTP."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from neuro_san.core.messages import MessageType
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat


def _final(messages: list[Any]) -> Any:
    return next(m for m in messages if m.type == MessageType.AGENT_FRAMEWORK)


COPIER = {"class": "neuro_san.middleware.network_copy_middleware.NetworkCopyMiddleware",
          "allow": {"reservations": True}, "args": {"reservationist": True, "sly_data": True}}  # fmt: skip


def test_network_copy_reserves_a_temporary_network_callable_by_its_id() -> None:
    async def body(fake: FakeLlmServer) -> None:
        copier = {"name": "copy_cat", "instructions": "Answer JSON.", "middleware": [COPIER],
                  "allow": {"to_upstream": {"sly_data": ["agent_reservations"]}}}  # fmt: skip
        echo = {"llm_config": fake.llm_config(), "tools": [{"name": "echo", "instructions": "Echo."}]}
        host, factory = make_host({"copy_cat": {"llm_config": fake.llm_config(), "tools": [copier]}, "echo": echo})
        fake.enqueue(Reply.answer('{"agent_name": "echo.hocon"}'))
        messages = await run_chat(host, "copy_cat", "copy echo", maximal=True)
        final = _final(messages)
        [reservation] = final.sly_data["agent_reservations"]
        reservation_id = reservation["reservation_id"]
        assert reservation_id.startswith("copy_cat-echo-") and reservation["lifetime_in_seconds"] == 300.0
        assert final.text == (
            f"The temporary agent name is {reservation_id}. Hurry, it's only available for 300.0 seconds."
        )
        assert any(m.type == MessageType.AGENT and m.text == '{"agent_name": "echo.hocon"}' for m in messages)
        # The copy answers under its id, and is not listed.
        assert _final(await run_chat(host, reservation_id, "hello copy")).text == "hello copy"
        assert reservation_id not in [a.agent_name for a in host.list_agents(include_private=True)]
        # Not JSON, or a network that is not served publicly.
        fake.enqueue(Reply.answer("copy echo please"))
        assert _final(await run_chat(host, "copy_cat", "x")).text == "Please provide the name of the network to copy."
        fake.enqueue(Reply.answer('{"agent_name": "nope"}'))
        expected = "Cannot find agent nope. Please provide a valid name of the network to copy."
        assert _final(await run_chat(host, "copy_cat", "x")).text == expected
        # It expires.
        host.reservations.clock = lambda: time.time() + 301
        assert not host.has_agent(reservation_id)
        await factory.aclose()

    run_with_fake_llm(body)


MAKER = '''
from neuro_san.interfaces.coded_tool import CodedTool

class Maker(CodedTool):
    async def async_invoke(self, args, sly_data):
        reservationist = args.get("reservationist")
        if reservationist is None:
            return "no reservationist"
        reservation = await reservationist.reserve(lifetime_in_seconds=60, prefix="made")
        async with reservationist:
            event = await reservationist.deploy({reservation: args["network"]}, confirmation=True)
        await event.wait()
        return reservation.get_reservation_id()
'''


def test_a_coded_tool_with_allow_reservations_deploys_a_temporary_network(tmp_path: Path) -> None:
    (tmp_path / "maker").mkdir()
    (tmp_path / "maker" / "maker.py").write_text(MAKER)

    async def body(fake: FakeLlmServer) -> None:
        llm = fake.llm_config()
        child = {"llm_config": llm, "tools": [{"name": "child", "instructions": "{greeting}"}],
                 "commondefs": {"replacement_strings": {"greeting": "Be kind."}}}  # fmt: skip
        broken = {"tools": [{"name": "a b"}]}
        tools = [
            {"name": "maker", "class": "maker.Maker", "function": {"description": "Makes."},
             "args": {"network": child}, "allow": {"reservations": True}},
            {"name": "broken", "class": "maker.Maker", "function": {"description": "Breaks."},
             "args": {"network": broken}, "allow": {"reservations": True}},
            {"name": "plain", "class": "maker.Maker", "function": {"description": "No."}, "args": {"network": child}},
        ]  # fmt: skip
        front = {"name": "front", "instructions": "x", "tools": ["maker", "broken", "plain"]}
        host, factory = make_host({"maker": {"llm_config": llm, "tools": [front, *tools]}}, [tmp_path])
        fake.enqueue(
            Reply.calls(FakeToolCall("maker", {}), FakeToolCall("broken", {}), FakeToolCall("plain", {})),
            Reply.answer("ok"),
        )
        await run_chat(host, "maker", "make one")
        made, broke, plain = [m["content"] for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
        assert made.startswith("made-") and plain == "no reservationist"
        assert broke.startswith("Error:") and "invalid agent name 'a b'" in broke
        assert _final(await run_chat(host, made, "hi child")).text == "hi child"
        assert fake.requests[-1].body["messages"][0] == {"role": "system", "content": "Be kind."}
        await factory.aclose()

    run_with_fake_llm(body)
