"""The pure pieces behind neuro-san 0.7.15's stream shapes: argument typing, a called
agent's input text, the external call's input, tool-node structures and JSON presence."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from neuro_san.api.grpc import agent_pb2

from gateway.transcoder.marshal import MessageCodec
from neuro_san.llm.interface import ModelResponse, Usage
from neuro_san.runtime.arguments import (
    agent_input_text,
    convert_arguments,
    network_input_text,
    synthesized_inquiry_schema,
)
from neuro_san.runtime.journal_shapes import coded_tool_result
from neuro_san.runtime.tool_binding import tool_function_name
from neuro_san.runtime.tools import describe_call
from neuro_san.runtime.usage_report import agent_usage, record_llm_call, request_usage


def test_arguments_take_the_declared_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "n": {"type": "integer"},
            "xs": {"type": "array", "items": {"type": "number"}},
            "flag": {"type": "number"},
            "inner": {"type": "object", "properties": {"y": {"type": "number"}}},
        },
    }
    given = {"x": 3, "n": 4.0, "xs": [1, 2.5], "flag": True, "inner": {"y": 1}, "extra": 5}
    converted = convert_arguments(given, schema)
    assert converted == {"x": 3.0, "n": 4, "xs": [1.0, 2.5], "flag": True, "inner": {"y": 1.0}, "extra": 5}
    assert [type(converted[k]) for k in ("x", "n")] == [float, int] and type(converted["xs"][0]) is float
    assert type(convert_arguments({"n": 4.5}, schema)["n"]) is float  # not integral: left alone


def test_a_called_agent_reads_one_sentence_per_argument() -> None:
    parameters = {
        "properties": {"topic": {"type": "string"}, "amount": {"type": "float"}, "tags": {"type": "array"}, "opts": {}}
    }
    arguments = {"topic": "cats", "amount": 2.0, "tags": ["a", 1], "opts": {"k": 1}, "undeclared": "x", "none": None}
    assert agent_input_text(arguments, parameters, "Write.") == (
        "The topic is 'cats'.\nThe amount is 2.0.\nThe tags are a, 1.\nThe opts is \"k\": 1.\nWrite."
    )
    # Without declared parameters every argument is said, and nothing is quoted.
    assert agent_input_text({"q": "hi", "n": 1}, None, "") == "The q is hi.\nThe n is 1."


def test_an_external_network_gets_a_json_block_and_a_double_underscore_name() -> None:
    assert network_input_text({"text": "hi", "times": 2.0}) == '```json\n{"text": "hi", "times": 2.0}```'
    assert tool_function_name("/parity_echo") == "__parity_echo"
    assert tool_function_name("/deep/x") == "__deep__x"
    assert tool_function_name("http://host:8080/team/x") == "__team__x"
    assert describe_call("adder") == "Invoking: `adder` with:"


def test_a_coded_tool_result_always_says_whether_it_failed() -> None:
    assert coded_tool_result("5", "5", False) == {"tool_end": True, "tool_error": False, "tool_output": "5"}
    assert coded_tool_result({"done": True}, '{"done": true}', False)["tool_output"] == {"done": True}
    failed = coded_tool_result(None, "Error: boom", True)
    assert failed == {"tool_end": True, "tool_error": True, "tool_output": "Error: boom"}


def test_usage_crosses_a_nested_request_into_the_total_only() -> None:
    def answered(tokens: int, text: str = "ok") -> ModelResponse:
        return ModelResponse(text=text, usage=Usage(tokens, 1), model="m")

    async def scenario() -> tuple[list[dict[str, object]], dict[str, object] | None, bool]:
        with request_usage() as outer:
            with agent_usage(1) as front:
                record_llm_call("p", "m", answered(10), 0.1)
                with request_usage() as inner, agent_usage(1) as called_front:
                    record_llm_call("p", "m", answered(100, text=""), 0.1)  # an empty answer
                report = called_front.report()
            assert front.report() is None  # the main front man reports through the request
        return outer.reports(), report, inner.nested

    (main, total), called, nested = asyncio.run(scenario())
    assert nested and called is not None and called["total_tokens"] == 101 and called["empty_responses"] == 1
    assert main["total_tokens"] == 11 and main["successful_requests"] == 1
    assert total["total_tokens"] == 112 and total["successful_requests"] == 2 and total["empty_responses"] == 1
    [(provider, by_model)] = total["models"].items()  # type: ignore[attr-defined]
    assert provider == "p" and by_model["m"]["total_tokens"] == 112 and "caveats" not in by_model["m"]


def test_http_json_always_has_message_text_and_entry_tools() -> None:
    response = agent_pb2.ChatResponse()
    response.response.chat_context.chat_histories.add().messages.add(type=2)
    data = MessageCodec(agent_pb2.ChatResponse).to_dict(response)
    assert data["response"]["text"] == ""
    assert data["response"]["chat_context"]["chat_histories"][0]["messages"][0] == {"type": "HUMAN", "text": ""}
    connectivity = agent_pb2.ConnectivityResponse()
    connectivity.connectivity_info.add(origin="leaf", display_as="coded_tool")
    data = MessageCodec(agent_pb2.ConnectivityResponse).to_dict(connectivity)
    assert data == {"connectivity_info": [{"origin": "leaf", "display_as": "coded_tool", "tools": []}]}


def test_a_network_without_parameters_is_offered_an_inquiry_and_the_log_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="neuro_san.runtime.arguments"):
        first = synthesized_inquiry_schema("/no_params_for_this_test")
        synthesized_inquiry_schema("/no_params_for_this_test")
    assert first["required"] == ["inquiry"] and first["properties"]["inquiry"]["type"] == "string"
    warnings = [r for r in caplog.records if "/no_params_for_this_test" in r.getMessage()]
    assert len(warnings) == 1


def test_connectivity_lists_the_tree_depth_first_as_neuro_san_does() -> None:
    """Each node before its tools, a branch fully before the next (neuro-san 0.7.15's order,
    seen on its intranet_agents network); a node reached twice is listed once."""
    from tests.support.runtime import make_host

    def agent(name: str, tools: list[str]) -> dict[str, Any]:
        return {"name": name, "function": {"description": name}, "instructions": "x", "tools": tools}

    document = {
        "llm_config": {"class": "scripted"},
        "tools": [
            agent("top", ["left", "right"]), agent("left", ["leaf_a", "shared"]), agent("right", ["shared"]),
            agent("leaf_a", []), agent("shared", []),
        ],
    }
    host, _ = make_host({"tree": document})
    entries, _ = host.connectivity("tree")
    assert [entry.origin for entry in entries] == ["top", "left", "leaf_a", "shared", "right"]


def test_a_listed_network_without_description_or_tags_has_them_empty_as_neuro_san() -> None:
    from neuro_san.api.grpc import concierge_pb2

    codec = MessageCodec(concierge_pb2.ConciergeResponse)
    listing = concierge_pb2.ConciergeResponse(agents=[concierge_pb2.AgentInfo(agent_name="bare")])
    assert json.loads(codec.to_json(listing)) == {"agents": [{"agent_name": "bare", "description": "", "tags": []}]}
