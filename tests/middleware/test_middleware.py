"""neuro-san's own agent middleware (``neuro_san.middleware``): PII detection,
summarisation and tool selection against the fake LLM over real HTTP (the refusals at
load: test_middleware_loading.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import ChatContext, ChatHistory, ChatMessage, MessageType, Origin
from neuro_san.network.builder import build_network
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat

PII = "langchain.agents.middleware.PIIMiddleware"
SUMMARY = "neuro_san.middleware.neuro_san_summarization_middleware.NeuroSanSummarizationMiddleware"
LOOKUP = '''
from neuro_san.interfaces.coded_tool import CodedTool

class Lookup(CodedTool):
    async def async_invoke(self, args, sly_data):
        return "the owner is carol@example.org, asked about " + str(args.get("who"))
'''


def _network(llm_config: dict[str, Any], middleware: list[dict[str, Any]], tools: bool = False) -> dict[str, Any]:
    front: dict[str, Any] = {"name": "guard", "instructions": "Be helpful.", "middleware": middleware}
    agents = [front]
    if tools:
        front["tools"] = ["lookup"]
        agents.append(
            {
                "name": "lookup",
                "function": {
                    "description": "Looks up who owns an address.",
                    "parameters": {"type": "object", "properties": {"who": {"type": "string"}}},
                },
                "class": "lookup.Lookup",
            }
        )
    return {"llm_config": llm_config, "tools": agents}


def _user_texts(fake: FakeLlmServer, index: int = -1) -> list[str]:
    return [m["content"] for m in fake.requests[index].body["messages"] if m["role"] == "user"]


def _final(messages: list[Any]) -> Any:
    return next(m for m in messages if m.type == MessageType.AGENT_FRAMEWORK)


def _sha8(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:8]


def test_redact_on_input_and_output_is_what_the_llm_and_the_client_see() -> None:
    phone = {"class": PII, "args": {"pii_type": "phone_number", "detector": r"\d{3}-\d{4}",
                                    "strategy": "redact", "apply_to_output": True}}  # fmt: skip

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [phone])})
        fake.enqueue(Reply.answer("Done. I called 555-0199 instead."))
        messages = await run_chat(host, "guard", "Send a message to Jenny at 867-5309.", maximal=True)
        assert _user_texts(fake) == ["Send a message to Jenny at [REDACTED_PHONE_NUMBER]."]
        assert "867-5309" not in json.dumps(fake.requests[-1].body)
        final = _final(messages)
        assert final.text == "Done. I called [REDACTED_PHONE_NUMBER] instead."
        ai = [m.text for m in messages if m.type == MessageType.AI]
        assert ai == ["Done. I called [REDACTED_PHONE_NUMBER] instead."]
        await factory.aclose()

    run_with_fake_llm(body)


def test_hash_covers_tool_results_and_history_but_not_without_the_flag(tmp_path: Path) -> None:
    (tmp_path / "guard").mkdir()
    (tmp_path / "guard" / "lookup.py").write_text(LOOKUP)
    email = {"class": PII, "args": {"pii_type": "email", "strategy": "hash", "apply_to_tool_results": True}}

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [email], tools=True)}, [tmp_path])
        fake.enqueue(Reply.calls(FakeToolCall("lookup", {"who": "x"})), Reply.answer("ok"))
        origin = (Origin("guard"),)
        history = ChatContext([ChatHistory(origin, [ChatMessage(MessageType.HUMAN, "I am dave@example.net", origin),
                                                    ChatMessage(MessageType.AI, "hello", origin)])])  # fmt: skip
        messages = await run_chat(host, "guard", "Who owns bob@example.com?", maximal=True, chat_context=history)
        first, second = fake.requests[0].body["messages"], fake.requests[1].body["messages"]
        assert f"<email_hash:{_sha8('bob@example.com')}>" in first[-1]["content"]
        assert "bob@example.com" not in json.dumps(first)
        tool_message = next(m for m in second if m["role"] == "tool")
        assert tool_message["content"].startswith(f"the owner is <email_hash:{_sha8('carol@example.org')}>")
        # The client's own tool result is not rewritten (the protection is for the LLM).
        results = [m.text for m in messages if m.type == MessageType.AGENT_TOOL_RESULT]
        assert results and "carol@example.org" in results[0]
        assert "dave@example.net" not in json.dumps(first)  # history restored from chat_context too
        assert f"<email_hash:{_sha8('dave@example.net')}>" in json.dumps(first)
        await factory.aclose()

    run_with_fake_llm(body)


def test_mask_keeps_a_recognisable_tail() -> None:
    card = {"class": PII, "args": {"pii_type": "credit_card", "strategy": "mask"}}

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [card])})
        await run_chat(host, "guard", "Pay with 4111-1111-1111-1111 or 1234-5678-9012-3456 please")
        # The second number fails the Luhn check: it is not a card number.
        assert _user_texts(fake) == ["Pay with ****-****-****-1111 or 1234-5678-9012-3456 please"]
        await factory.aclose()

    run_with_fake_llm(body)


def test_block_stops_the_agent_without_calling_the_llm() -> None:
    block = {"class": PII, "args": {"pii_type": "email", "strategy": "block"}}

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [block])})
        messages = await run_chat(host, "guard", "mail bob@example.com", maximal=True)
        assert fake.requests == []
        expected = "Error from guard: Agent stopped due to exception Detected 1 instance(s) of email in text content"
        assert _final(messages).text == expected
        assert [m.text for m in messages if m.type == MessageType.AI] == [expected]
        # Clean input goes through.
        clean = await run_chat(host, "guard", "hello there")
        assert _final(clean).text == "hello there" and len(fake.requests) == 1
        await factory.aclose()

    run_with_fake_llm(body)


def test_two_pii_types_chain_in_order() -> None:
    both = [
        {"class": PII, "args": {"pii_type": "email", "strategy": "redact"}},
        {"class": PII, "args": {"pii_type": "ip", "strategy": "mask"}},
    ]

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), both)})
        await run_chat(host, "guard", "a@b.io from 10.1.2.3 and 999.1.1.1")
        assert _user_texts(fake) == ["[REDACTED_EMAIL] from *.*.*.3 and 999.1.1.1"]
        await factory.aclose()

    run_with_fake_llm(body)


def test_summarisation_past_the_threshold_rewrites_what_the_llm_and_chat_context_get() -> None:
    summarise = {"class": SUMMARY, "args": {"model": "summary-model", "trigger": [["messages", 3]],
                                            "keep": ["messages", 1], "chat_history": True}}  # fmt: skip

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [summarise])})
        first = _final(await run_chat(host, "guard", "first question about the beatles"))
        assert len(fake.requests) == 1  # one message: below the trigger
        fake.enqueue(Reply.answer("They asked about the Beatles."), Reply.answer("second answer"))
        messages = await run_chat(host, "guard", "second question", maximal=True, chat_context=first.chat_context)
        summary_call, main_call = fake.requests[1].body, fake.requests[2].body
        assert summary_call["model"] == "summary-model" and summary_call.get("tools") is None
        assert "first question about the beatles" in summary_call["messages"][0]["content"]
        assert [(m["role"], m["content"]) for m in main_call["messages"]] == [
            ("system", "Be helpful."),
            ("user", "Here is a summary of the conversation to date:\n\nThey asked about the Beatles."),
            ("user", "second question"),
        ]
        assert any(m.type == MessageType.AGENT and m.text == "They asked about the Beatles." for m in messages)
        history = _final(messages).chat_context.chat_histories[0].messages
        assert [(MessageType(m.type).name, m.text) for m in history] == [
            ("HUMAN", "Here is a summary of the conversation to date:\n\nThey asked about the Beatles."),
            ("HUMAN", "second question"),
            ("AI", "second answer"),
        ]
        await factory.aclose()

    run_with_fake_llm(body)


def test_summary_kept_out_of_chat_context_when_asked() -> None:
    summarise = {"class": SUMMARY, "args": {"trigger": ["messages", 2], "keep": ["messages", 1],
                                            "keep_summary_in_context": False}}  # fmt: skip

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [summarise])})
        first = _final(await run_chat(host, "guard", "one"))
        fake.enqueue(Reply.answer("S"), Reply.answer("two-answer"))
        second = _final(await run_chat(host, "guard", "two", chat_context=first.chat_context))
        assert len(fake.requests) == 3
        history = second.chat_context.chat_histories[0].messages
        assert [m.text for m in history] == ["one", "one", "two", "two-answer"]
        await factory.aclose()

    run_with_fake_llm(body)


SELECTOR = "neuro_san.middleware.llm_config_tool_selector_middleware.LlmConfigToolSelectorMiddleware"
ADDER = '''
from neuro_san.interfaces.coded_tool import CodedTool

class Adder(CodedTool):
    async def async_invoke(self, args, sly_data):
        return int(args["amount"]) + int(args.get("x", 0))
'''


def test_tool_selection_offers_only_the_chosen_tools_and_refuses_the_others(tmp_path: Path) -> None:
    (tmp_path / "picky").mkdir()
    (tmp_path / "picky" / "adder.py").write_text(ADDER)
    adders = [
        {"name": f"adder_{word}", "class": "adder.Adder", "args": {"amount": amount},
         "function": {"description": f"Adds {amount}.",
                      "parameters": {"type": "object", "properties": {"x": {"type": "int"}}}}}
        for word, amount in (("one", 1), ("two", 2), ("three", 3))
    ]  # fmt: skip
    selector = {"class": SELECTOR, "args": {
        "activation_capsule": True, "sly_data": True, "max_tools": 1,
        "llm_config": {"fallbacks": [{"class": "no-such-provider"}, {"model_name": "selector-model"}]}}}  # fmt: skip

    async def body(fake: FakeLlmServer) -> None:
        names = [a["name"] for a in adders]
        front = {"name": "picky", "instructions": "Add.", "tools": names, "middleware": [selector]}
        host, factory = make_host({"picky": {"llm_config": fake.llm_config(), "tools": [front, *adders]}}, [tmp_path])
        fake.enqueue(
            Reply.answer('{"tools": ["adder_three", "adder_two"]}'),
            Reply.calls(FakeToolCall("adder_one", {"x": 1}), FakeToolCall("adder_three", {"x": 1})),
            Reply.answer('```json\n{"tools": ["adder_three"]}\n```'),
            Reply.answer("done"),
        )
        messages = await run_chat(host, "picky", "add three please", maximal=True)
        selection, main = fake.requests[0].body, fake.requests[1].body
        assert selection["model"] == "selector-model" and "tools" not in selection
        assert [m["role"] for m in selection["messages"]] == ["system", "user"]
        assert "select the most relevant tools" in selection["messages"][0]["content"]
        assert "only the first 1 will be used" in selection["messages"][0]["content"]
        assert selection["messages"][1]["content"] == "add three please"
        assert [t["function"]["name"] for t in main["tools"]] == ["adder_three"]
        results = [m["content"] for m in fake.requests[3].body["messages"] if m["role"] == "tool"]
        assert results[0].startswith("Error: there is no tool named 'adder_one'") and results[1] == "4"
        agent_texts = [m.text for m in messages if m.type == MessageType.AGENT]
        assert '{"tools": ["adder_three", "adder_two"]}' in agent_texts
        assert _final(messages).text == "done"
        await factory.aclose()

    run_with_fake_llm(body)


def test_tool_selection_that_names_no_known_tool_offers_them_all(tmp_path: Path) -> None:
    selector = {"class": SELECTOR, "args": {"activation_capsule": True, "llm_config": {}}}

    async def body(fake: FakeLlmServer) -> None:
        helper = {"name": "helper", "instructions": "Help.", "function": {"description": "Helps."}}
        front = {"name": "f", "instructions": "x", "tools": ["helper"], "middleware": [selector]}
        host, factory = make_host({"f": {"llm_config": fake.llm_config(), "tools": [front, helper]}})
        fake.enqueue(Reply.answer("I cannot decide"), Reply.answer("fine"))
        assert _final(await run_chat(host, "f", "hi")).text == "fine"
        assert [t["function"]["name"] for t in fake.requests[1].body["tools"]] == ["helper"]
        await factory.aclose()

    run_with_fake_llm(body)


def test_output_blocking_and_middleware_on_a_coded_tool() -> None:
    block = {"class": PII, "args": {"pii_type": "email", "strategy": "block", "apply_to_input": False,
                                    "apply_to_output": True}}  # fmt: skip

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"guard": _network(fake.llm_config(), [block])})
        fake.enqueue(Reply.answer("write to eve@example.com"))
        final = _final(await run_chat(host, "guard", "who?"))
        assert final.text.startswith("Error from guard: Agent stopped due to exception Detected 1 instance(s) of email")
        await factory.aclose()

    run_with_fake_llm(body)
    with pytest.raises(NetworkLoadError) as caught:
        build_network({"tools": [{"name": "a", "instructions": "x", "tools": ["t"]},
                                 {"name": "t", "class": "m.T", "function": {"description": "d"},
                                  "middleware": [{"class": PII, "args": {"pii_type": "email"}}]}]},
                      "n.hocon", "n")  # fmt: skip
    assert caught.value.key_path == "tools[1].middleware" and "coded tool" in caught.value.reason

