"""The MAXIMAL stream's shapes, as neuro-san 0.7.15 sends them, guarded without neuro-san:
our real server, over HTTP, on the parity networks (tests/fixtures/parity) with the
scripted fake LLM. tests/system/test_stream_parity.py compares the same chats with a live
neuro-san; this module pins each shape so CI catches a regression."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from neuro_san.runtime.usage_report import AGENT_CAVEAT, MAIN_NETWORK_CAVEAT, TOTAL_CAVEAT
from tests.fakes.fake_llm import FakeLlmServer, RecordedRequest
from tests.gateway_http_support import call
from tests.support.fake_thread import FakeInThread
from tests.support.parity import PARITY, maximal_chat, origin_of
from tests.support.parity_llm import planned_reply
from tests.support.servers import start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

REPORT_KEYS = {
    "total_tokens", "prompt_tokens", "completion_tokens", "successful_requests",
    "empty_responses", "total_cost", "time_taken_in_seconds", "caveats",
}  # fmt: skip
MODEL_KEYS = REPORT_KEYS - {"caveats"}


@dataclass
class Rig:
    fake: FakeLlmServer
    port: int

    def chat(self, agent: str, text: str, **options: Any) -> tuple[list[dict[str, Any]], list[RecordedRequest]]:
        """The stream's messages and the LLM requests the chat made."""
        seen = len(self.fake.requests)
        messages = maximal_chat(self.port, agent, text, options.get("sly_data"), options.get("chat_context"))
        return messages, self.fake.requests[seen:]


@pytest.fixture(scope="module")
def shapes() -> Iterator[Rig]:
    with FakeInThread(rule=planned_reply) as fake:
        env = {"AGENT_TOOL_PATH": str(PARITY / "coded_tools"), "OPENAI_API_BASE": fake.openai_base}
        env["OPENAI_API_KEY"] = "sk-shapes"
        with start_server(manifest=PARITY / "manifest.hocon", env=env, http=True) as server:
            yield Rig(fake, server.http_port)


def _at(messages: list[dict[str, Any]], origin: str, type_: str = "", text: str | None = None) -> list[dict[str, Any]]:
    return [
        m for m in messages
        if origin_of(m) == origin and (not type_ or m["type"] == type_) and (text is None or m["text"] == text)
    ]  # fmt: skip


def _reports(messages: list[dict[str, Any]], origin: str) -> list[dict[str, Any]]:
    return [m["structure"] for m in _at(messages, origin, "AGENT", "") if "total_tokens" in m.get("structure", {})]


def test_every_message_carries_text(shapes: Rig) -> None:
    messages, _ = shapes.chat("parity_progress", "run", sly_data={"customer": "ann"})
    assert all("text" in m for m in messages)
    progress = _at(messages, "runner#1.worker#1", "AGENT_PROGRESS")
    assert [(m["text"], m["structure"]["progress"]) for m in progress] == [("", 0.0), ("", 0.5), ("", 1.0)]
    assert messages[-1]["sly_data"] == {"job_result": "2 steps for ann", "shown_as": "visible under another name"}


def test_usage_reports_count_the_agents_below_and_nest_models(shapes: Rig) -> None:
    messages, requests = shapes.chat("parity_nested", "go")
    bottom, middle = _reports(messages, "top#1.middle#1.bottom#1"), _reports(messages, "top#1.middle#1")
    assert len(bottom) == len(middle) == 1
    for report in (bottom[0], middle[0]):
        assert report.keys() == REPORT_KEYS and report["caveats"][0] == AGENT_CAVEAT
        assert report["total_tokens"] == report["prompt_tokens"] + report["completion_tokens"]
        assert report["total_cost"] == 0.0 and report["empty_responses"] == 0
    assert bottom[0]["successful_requests"] == 1
    assert middle[0]["successful_requests"] == 3, "middle's two calls and bottom's one"
    assert middle[0]["total_tokens"] > bottom[0]["total_tokens"]
    main, total = _reports(messages, "top#1")
    assert main.keys() == REPORT_KEYS and main["caveats"][0] == MAIN_NETWORK_CAVEAT
    assert total.keys() == REPORT_KEYS | {"models"} and total["caveats"][0] == TOTAL_CAVEAT
    assert main["successful_requests"] == total["successful_requests"] == len(requests) == 5
    [(provider, by_model)] = total["models"].items()
    [(model, entry)] = by_model.items()
    assert (provider, model) == ("openai", "gpt-4o-2024-08-06") and entry.keys() == MODEL_KEYS
    assert entry["successful_requests"] == 5 and entry["total_tokens"] == total["total_tokens"]
    assert [m["type"] for m in messages[-3:]] == ["AGENT", "AGENT", "AGENT_FRAMEWORK"]


def test_parallel_sub_agents_each_report_and_the_front_man_counts_both(shapes: Rig) -> None:
    messages, _ = shapes.chat("parity_parallel", "go")
    assert [r["successful_requests"] for r in _reports(messages, "boss#1.left#1")] == [1]
    assert [r["successful_requests"] for r in _reports(messages, "boss#1.right#1")] == [1]
    assert [r["successful_requests"] for r in _reports(messages, "boss#1")] == [4, 4]


def test_invoking_text_got_result_and_typed_arguments(shapes: Rig) -> None:
    messages, _ = shapes.chat("parity_coded", "add")
    [invoking] = _at(messages, "calc_front#1", "AGENT", "Invoking: `adder` with:")
    assert invoking["structure"] == {"invoking_start": True, "invoked_agent_name": "adder", "params": {"a": 2, "b": 3}}
    [received] = _at(messages, "calc_front#1.adder#1", "AGENT", "Received arguments:")
    assert received["structure"]["tool_start"] is True
    [got] = _at(messages, "calc_front#1.adder#1", "AGENT", "Got result:")
    # The float parameters arrived as floats (2 → 2.0), so the tool printed them so.
    assert got["structure"] == {"tool_end": True, "tool_error": False, "tool_output": "2.0 + 3.0 = 5.0"}


def test_a_sub_agent_gets_one_sentence_per_argument(shapes: Rig) -> None:
    messages, _ = shapes.chat("parity_sub", "ask")
    [human] = _at(messages, "asker#1.helper#1", "HUMAN")
    assert human["text"] == "The topic is 'cats'.\nThe amount is 2.0.\nWrite about the topic."
    nested, _ = shapes.chat("parity_nested", "go")
    [bottom] = _at(nested, "top#1.middle#1.bottom#1", "HUMAN")
    assert bottom["text"] == "The query is 'deeper'.\nThe level is 3."


def test_chat_context_keeps_the_tool_output_for_the_next_turn(shapes: Rig) -> None:
    first, _ = shapes.chat("parity_coded", "add")
    context = first[-1]["chat_context"]
    [history] = context["chat_histories"]
    texts = [(m["type"], m["text"]) for m in history["messages"]]
    assert texts == [("HUMAN", "add"), ("AI", "2.0 + 3.0 = 5.0"), ("AI", "ANSWER(2.0 + 3.0 = 5.0)")]
    _, requests = shapes.chat("parity_coded", "again", chat_context=context)
    sent = [(m["role"], m["content"]) for m in requests[0].messages if m["role"] != "system"]
    assert sent[:4] == [
        ("user", "add"),
        ("assistant", "2.0 + 3.0 = 5.0"),
        ("assistant", "ANSWER(2.0 + 3.0 = 5.0)"),
        ("user", "again"),
    ]


def test_an_external_network_call_in_every_part(shapes: Rig) -> None:
    messages, requests = shapes.chat("parity_external", "call")
    offered = [tool["function"]["name"] for tool in requests[0].body["tools"]]
    assert offered == ["__parity_echo"], "the LLM sees the network as __name"
    [invoking] = _at(messages, "caller#1", "AGENT", "Invoking: `/parity_echo` with:")
    assert invoking["structure"]["invoked_agent_name"] == "/parity_echo"
    node = "caller#1./parity_echo#1"
    [received] = _at(messages, node, "AGENT", "Received arguments:")
    assert received["structure"] == {"tool_start": True, "tool_args": {"text": "over there", "times": 2.0}}
    [human] = _at(messages, node + ".echoer#1", "HUMAN")
    assert human["text"] == '```json\n{"text": "over there", "times": 2.0}```'
    answer = f"ANSWER({human['text']})"
    [got] = _at(messages, node, "AGENT", "Got result:")
    assert got["structure"] == {"tool_end": True, "tool_output": answer}
    [result] = _at(messages, "caller#1", "AGENT_TOOL_RESULT")
    assert result["text"] == answer and origin_of({"origin": result["tool_result_origin"]}) == node
    # The called front man reports as an agent; its usage joins the caller's request total.
    [echoer] = _reports(messages, node + ".echoer#1")
    assert echoer["caveats"][0] == AGENT_CAVEAT and echoer["successful_requests"] == 1
    main, total = _reports(messages, "caller#1")
    assert main["successful_requests"] == 2 and total["successful_requests"] == 3
    assert sum(1 for m in messages if "models" in m.get("structure", {})) == 1
    assert json.dumps(messages).count("Request total") == 1


def test_connectivity_entries_always_carry_tools(shapes: Rig) -> None:
    reply = call(shapes.port, "GET", "/api/v1/parity_nested/connectivity")
    entries = {e["origin"]: e["tools"] for e in reply.json()["connectivity_info"]}
    assert entries == {"top": ["middle"], "middle": ["bottom"], "bottom": []}


def test_a_forwarded_tool_result_is_re_rooted_and_sly_data_crosses_as_allowed(shapes: Rig) -> None:
    messages, requests = shapes.chat("parity_relay", "relay it")
    offered = requests[0].body["tools"][0]["function"]
    assert offered["name"] == "__parity_coded" and offered["parameters"]["required"] == ["inquiry"]
    assert not [m for m in messages if m["text"].startswith("The front-man of external agent")], "a log line only"
    inner = "relay#1./parity_coded#1.calc_front#1"
    [forwarded] = _at(messages, inner, "AGENT_TOOL_RESULT")
    assert origin_of({"origin": forwarded["tool_result_origin"]}) == inner + ".adder#1"
    assert messages[-1]["sly_data"] == {"total": 5}
