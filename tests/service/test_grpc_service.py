"""The gRPC API layer against a real server process: routes, errors, streaming."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from neuro_san.api.grpc import agent_pb2, chat_pb2

from neuro_san.core.internal_metadata import INTERNAL_TOKEN_KEY, LEAN_STREAM_KEY, SHARED_TOKEN_SETTING
from tests.support import grpc_calls as calls
from tests.support.servers import BUNDLED_MANIFEST, ServerProcess, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

AI = chat_pb2.ChatMessage.AI
HUMAN = chat_pb2.ChatMessage.HUMAN
FRAMEWORK = chat_pb2.ChatMessage.AGENT_FRAMEWORK


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.grpc_target) as chan:
        yield chan


@pytest.mark.parametrize("qualified", [False, True], ids=["per-agent", "qualified"])
def test_function_on_both_routes(channel: grpc.Channel, qualified: bool) -> None:
    response = calls.function(channel, "math_guy", qualified)
    assert response.function.description == "I do arithmetic."
    params = calls.as_dict(response.function)["parameters"]
    assert params["properties"]["expression"]["type"] == "string"


@pytest.mark.parametrize("qualified", [False, True], ids=["per-agent", "qualified"])
def test_connectivity_lists_every_node(channel: grpc.Channel, qualified: bool) -> None:
    response = calls.connectivity(channel, "math_guy", qualified)
    nodes = {i.origin: (list(i.tools), i.display_as) for i in response.connectivity_info}
    assert nodes == {"math_guy": (["calculator"], "llm_agent"), "calculator": ([], "coded_tool")}
    assert calls.as_dict(response)["metadata"]["description"].startswith("Does arithmetic")

    external = calls.connectivity(channel, "math_guy_passthrough", qualified)
    assert [(i.origin, i.display_as) for i in external.connectivity_info] == [
        ("passthrough", "llm_agent"),
        ("/math_guy", "external_agent"),
    ]


@pytest.mark.parametrize("qualified", [False, True], ids=["per-agent", "qualified"])
def test_minimal_chat_is_one_framework_message(channel: grpc.Channel, qualified: bool) -> None:
    responses = calls.streaming_chat(channel, "hello_world", calls.chat_request("hello there"), qualified)
    assert len(responses) == 1
    message = responses[0].response
    assert not responses[0].HasField("request")
    assert message.type == FRAMEWORK
    assert message.text == "Announcement: In other words: hello there"
    assert not message.origin
    history = message.chat_context.chat_histories
    assert len(history) == 1
    assert [(o.tool, o.instantiation_index) for o in history[0].origin] == [("announcer", 1)]
    # As neuro-san, the front man's history keeps the tool's output before its answer.
    tool_output = message.text.removeprefix("Announcement: ")
    assert [(m.type, m.text) for m in history[0].messages] == [
        (HUMAN, "hello there"),
        (AI, tool_output),
        (AI, message.text),
    ]


def test_maximal_chat_streams_ordered_messages_with_origins(channel: grpc.Channel) -> None:
    request = calls.chat_request("6 * 7", maximal=True, sly_data={"secret": "zebra"})
    responses = calls.streaming_chat(channel, "math_guy", request)
    steps = [
        (chat_pb2.ChatMessage.ChatMessageType.Name(r.response.type), calls.origin_names(r.response))
        for r in responses
    ]
    front, tool = ["math_guy#1"], ["math_guy#1", "calculator#1"]
    assert steps == [
        ("SYSTEM", front),
        ("HUMAN", front),
        ("AGENT", front),  # Invoking `calculator`
        ("AGENT", tool),  # Received arguments
        ("AGENT_PROGRESS", tool),
        ("AGENT_PROGRESS", tool),
        ("AGENT", tool),  # Got result
        ("AGENT_TOOL_RESULT", front),
        ("AI", front),
        ("AGENT", front),  # the front man's token accounting
        ("AGENT", front),  # the whole request's token accounting
        ("AGENT_FRAMEWORK", []),
    ]
    assert all(r.request == request for r in responses)
    invoking = calls.as_dict(responses[2].response)["structure"]
    assert invoking == {"invoking_start": True, "invoked_agent_name": "calculator", "params": {"expression": "6 * 7"}}
    tool_result = responses[7].response
    assert tool_result.text == "42"
    assert calls.origin_names(chat_pb2.ChatMessage(origin=tool_result.tool_result_origin)) == tool
    accounting = calls.as_dict(responses[9].response)["structure"]
    assert accounting["successful_requests"] == 2 and accounting["total_tokens"] > 0
    final = responses[-1].response
    assert final.text == "The answer is 42."
    # Only the allowed key comes back, and the whole number is a whole number.
    assert calls.as_dict(final)["sly_data"] == {"equals": 42}
    assert "zebra" not in str([r.response for r in responses])  # the echoed request aside


def test_continuation_carries_the_history(channel: grpc.Channel) -> None:
    first = calls.streaming_chat(channel, "echo", calls.chat_request("first turn"))[-1].response
    assert first.text == "first turn"
    second = calls.streaming_chat(
        channel, "echo", calls.chat_request("second turn", chat_context=first.chat_context)
    )[-1].response
    messages = second.chat_context.chat_histories[0].messages
    assert [m.text for m in messages] == ["first turn", "first turn", "second turn", "second turn"]


def test_empty_request_ends_with_one_empty_response(channel: grpc.Channel) -> None:
    responses = calls.streaming_chat(channel, "echo", agent_pb2.ChatRequest())
    assert responses == [agent_pb2.ChatResponse()]


def test_network_in_a_sub_folder(channel: grpc.Channel) -> None:
    for qualified in (False, True):
        assert calls.function(channel, "deep/math_guy", qualified).function.description == "I do arithmetic."
        final = calls.streaming_chat(channel, "deep/math_guy", calls.chat_request("1+1"), qualified)[-1]
        assert final.response.text == "The answer is 2."
    listed = [a.agent_name for a in calls.concierge(channel).agents]
    assert "deep/math_guy" not in listed  # served but not public


def test_external_agent_in_process(channel: grpc.Channel) -> None:
    final = calls.streaming_chat(channel, "math_guy_passthrough", calls.chat_request("2 ** 10"))[-1].response
    assert final.text == "math_guy says: The answer is 1024."
    assert calls.as_dict(final)["sly_data"] == {"equals": 1024}


def test_unknown_agent_per_agent_route_is_unimplemented(channel: grpc.Channel) -> None:
    for method in (calls.function, calls.connectivity):
        with pytest.raises(grpc.RpcError) as info:
            method(channel, "no_such_agent")
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as info:
        calls.streaming_chat(channel, "no_such_agent", calls.chat_request("hi"))
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_unknown_agent_qualified_route_is_not_found(channel: grpc.Channel) -> None:
    for method in (calls.function, calls.connectivity):
        with pytest.raises(grpc.RpcError) as info:
            method(channel, "no_such_agent", qualified=True)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert "no_such_agent" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        calls.streaming_chat(channel, "no_such_agent", calls.chat_request("hi"), qualified=True)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_qualified_route_without_agent_name(channel: grpc.Channel) -> None:
    call = channel.unary_unary(
        calls.path(None, "Function"),
        request_serializer=agent_pb2.FunctionRequest.SerializeToString,
        response_deserializer=agent_pb2.FunctionResponse.FromString,
    )
    with pytest.raises(grpc.RpcError) as info:
        call(agent_pb2.FunctionRequest(), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "agent-name" in info.value.details()


def test_concierge_lists_public_networks(channel: grpc.Channel) -> None:
    agents = {a.agent_name: a for a in calls.concierge(channel).agents}
    assert sorted(agents) == ["echo", "hello_world", "math_guy", "math_guy_passthrough"]
    assert agents["hello_world"].description.startswith("Announces a greeting")
    assert list(agents["hello_world"].tags) == ["example", "offline"]


def test_health(channel: grpc.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    for service in ("", "neuro-san.Agent"):
        status = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
        assert status == health_pb2.HealthCheckResponse.SERVING


def test_oversized_request_is_resource_exhausted(channel: grpc.Channel) -> None:
    huge = calls.chat_request("x" * (17 * 1024 * 1024))
    with pytest.raises(grpc.RpcError) as info:
        calls.streaming_chat(channel, "echo", huge)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert calls.function(channel, "echo").function.description  # still serving


def _grpcurl(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("grpcurl") or str(Path(__import__("sys").executable).parent / "grpcurl")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)


def test_grpcurl_lists_services_and_chats(server: ServerProcess) -> None:
    listing = _grpcurl("-plaintext", server.grpc_target, "list")
    assert listing.returncode == 0, listing.stderr
    services = set(listing.stdout.split())
    assert services == {
        "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService",
        "dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    }
    described = _grpcurl(
        "-plaintext", server.grpc_target, "describe", "dev.cognizant_ai.neuro_san.api.grpc.agent.ChatRequest"
    )
    assert "user_message = 4" in described.stdout, described.stderr
    chat = _grpcurl(
        "-plaintext", "-H", "agent-name: hello_world",
        "-d", json.dumps({"user_message": {"text": "hi from grpcurl"}, "chat_filter": {"chat_filter_type": "MAXIMAL"}}),
        server.grpc_target, "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat",
    )
    assert chat.returncode == 0, chat.stderr
    assert "AGENT_FRAMEWORK" in chat.stdout and "hi from grpcurl" in chat.stdout


def test_broken_network_is_refused_and_the_rest_serve(tmp_path: Path) -> None:
    shutil.copy(BUNDLED_MANIFEST.parent / "echo.hocon", tmp_path / "echo.hocon")
    (tmp_path / "broken.hocon").write_text('{ "tools": [ { "name": "x", ')
    (tmp_path / "lost.json").write_text(json.dumps({"tools": [{"name": "front", "tools": ["ghost"]}]}))
    (tmp_path / "manifest.json").write_text(json.dumps({"echo.hocon": True, "broken.hocon": True, "lost.json": True}))
    with start_server(manifest=tmp_path / "manifest.json") as running:
        with grpc.insecure_channel(running.grpc_target) as chan:
            final = calls.streaming_chat(chan, "echo", calls.chat_request("still here"))[-1].response
            assert final.text == "still here"
            with pytest.raises(grpc.RpcError) as info:
                calls.function(chan, "lost", qualified=True)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
        log = running.log()
    assert "broken.hocon" in log
    assert "lost.json" in log and "ghost" in log


TOKEN = "t" * 40


def _kinds(responses: list[agent_pb2.ChatResponse]) -> list[tuple[str, list[str]]]:
    return [(chat_pb2.ChatMessage.ChatMessageType.Name(r.response.type), calls.origin_names(r.response))
            for r in responses]


def _usage(response: agent_pb2.ChatResponse) -> dict[str, Any] | None:
    """A token report's structure, else None."""
    structure = calls.as_dict(response.response).get("structure")
    return structure if isinstance(structure, dict) and "total_tokens" in structure else None


@pytest.mark.parametrize("agent", ["math_guy", "math_guy_passthrough"])
def test_a_lean_stream_leaves_out_only_what_it_names_and_only_for_our_gateway(agent: str) -> None:
    """LEAN_STREAM_KEY (the front-ends' facade's): ``inputs`` leaves out the SYSTEM and HUMAN
    messages, a called network's included, and the request's echo; ``agent-usage`` every
    token report but the request's total. Every other message is as in the whole MAXIMAL
    stream. A client that may not send the key gets the whole stream."""
    request = calls.chat_request("6 * 7", maximal=True)
    token = (INTERNAL_TOKEN_KEY, TOKEN)
    with start_server(env={SHARED_TOKEN_SETTING: TOKEN}) as server, grpc.insecure_channel(server.grpc_target) as chan:
        whole = calls.streaming_chat(chan, agent, request)
        untrusted = calls.streaming_chat(chan, agent, request, metadata=[(LEAN_STREAM_KEY, "inputs,agent-usage")])
        inputs = calls.streaming_chat(chan, agent, request, metadata=[(LEAN_STREAM_KEY, "inputs"), token])
        lean = calls.streaming_chat(chan, agent, request, metadata=[(LEAN_STREAM_KEY, "inputs,agent-usage"), token])
    assert {"SYSTEM", "HUMAN"} <= {kind for kind, _ in _kinds(whole)}
    assert _kinds(untrusted) == _kinds(whole)
    assert all(r.request == request for r in untrusted)
    no_inputs = [r for r in whole if _kinds([r])[0][0] not in ("SYSTEM", "HUMAN")]
    assert _kinds(inputs) == _kinds(no_inputs)
    assert not any(r.HasField("request") for r in inputs + lean)
    reports = [r for r in no_inputs if _usage(r) is not None]
    assert len(reports) >= 2  # the main network's and the request's total, a called network's too
    assert _kinds(lean) == _kinds([r for r in no_inputs if r not in reports[:-1]])
    total, kept = _usage(reports[-1]), [u for r in lean if (u := _usage(r)) is not None]
    assert total is not None and "models" in total
    assert [(u["total_tokens"], sorted(u["models"])) for u in kept] == [
        (total["total_tokens"], sorted(total["models"]))]
    for stream in (inputs, lean):
        assert stream[-1].response.text == whole[-1].response.text
    assert "The answer is 42." in whole[-1].response.text
