"""A2A agents as tools of our networks: a peer made with the a2a-sdk (not our code),
and another of our servers reached over A2A."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import CancelTaskRequest, Part, SendMessageRequest
from google.protobuf import json_format, struct_pb2

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.builder import build_network
from tests.a2a_support import a2a_client, a2a_peer, final_text, send, user_message, write_network
from tests.fakes.fake_llm import Reply, tool_then_answer_rule
from tests.support.fake_thread import FakeInThread
from tests.support.servers import start_server
from tests.support.waits import until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


def _asker(tool: Any, allow: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "tools": [
            {
                "name": "asker",
                "function": {"description": "Asks the oracle."},
                "instructions": "Ask the oracle, then repeat its answer.",
                "tools": [tool],
                "allow": allow or {},
            },
        ],
    }


def _ask_over_a2a(base: str, agent: str, text: str, sly_data: dict[str, Any] | None = None) -> str:
    async def scenario() -> str:
        message = user_message(text)
        if sly_data:  # as a data part: our server merges JSON objects into sly_data
            message.parts.append(Part(data=json_format.ParseDict(sly_data, struct_pb2.Value())))
        async with a2a_client(f"{base}/a2a/{agent}", streaming=False) as client:
            return final_text(await send(client, message))

    return asyncio.run(scenario())


def test_a_network_calls_an_a2a_sdk_agent_and_uses_its_answer(tmp_path: Path) -> None:
    with a2a_peer(key="peer-secret") as peer, FakeInThread(rule=tool_then_answer_rule(
            "__oracle", {"inquiry": "what is the number?"})) as fake:
        write_network(tmp_path, "asker", _asker({"a2a": peer, "headers": {"Authorization": "Bearer ${PEER_KEY}"}},
                                                {"to_downstream": {"sly_data": ["unit"]}}))
        write_network(tmp_path, "keyless", _asker(f"a2a+{peer}"))
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config()), "PEER_KEY": "peer-secret"}
        with start_server(tmp_path / "manifest.hocon", env=env, http=True) as server:
            answer = _ask_over_a2a(server.http_base, "asker", "ask the oracle", {"unit": "cm", "secret": "s3"})
            oracle = "oracle says 1234 to: what is the number?"  # the inquiry itself
            assert answer == oracle + ' (sly_data: {"unit": "cm"})'  # only what to_downstream allows
            assert answer in [r.last_input_text() for r in fake.requests]  # the tool result reached the LLM
            # The LLM saw the peer's card as the tool's description, with a free-text inquiry.
            tools = fake.requests[0].body["tools"]
            assert tools[0]["function"]["name"] == "__oracle"  # an external agent, named as neuro-san names them
            assert "Knows the magic number." in tools[0]["function"]["description"]
            assert tools[0]["function"]["parameters"]["required"] == ["inquiry"]
            # Without the key the peer refuses: the tool result says so, the request still answers.
            refused = _ask_over_a2a(server.http_base, "keyless", "ask the oracle")
            assert refused.startswith("Error:") and "401" in refused
            connectivity = httpx.get(f"{server.http_base}/api/v1/asker/connectivity", timeout=10).json()
            nodes = {n["origin"]: n for n in connectivity["connectivity_info"]}
            labelled = f"a2a+{peer}#headers-1"  # the header set's label; the key itself is nowhere
            assert nodes["asker"]["tools"] == [labelled]
            assert nodes[labelled]["display_as"] == "external_agent"
            assert "peer-secret" not in json.dumps(connectivity)


def test_a_failed_a2a_task_is_an_error_result(tmp_path: Path) -> None:
    with a2a_peer() as peer, FakeInThread(rule=tool_then_answer_rule("__oracle", {"inquiry": "please fail"})) as fake:
        write_network(tmp_path, "asker", _asker(f"a2a+{peer}"))
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config())}
        with start_server(tmp_path / "manifest.hocon", env=env, http=True) as server:
            answer = _ask_over_a2a(server.http_base, "asker", "ask")
    assert answer == "Error: the A2A task ended failed: the oracle is confused"


def test_network_a_on_one_server_calls_network_b_on_another_over_a2a(tmp_path: Path) -> None:
    with start_server(http=True) as server_b:
        relay = _relay(f"a2a+{server_b.http_base}/a2a/math_guy")
        equals = {"sly_data": ["equals"]}
        relay["tools"][0]["allow"] = {"from_downstream": equals, "to_upstream": equals}
        write_network(tmp_path, "relay", relay)
        with start_server(tmp_path / "manifest.hocon", http=True) as server_a:
            async def scenario() -> tuple[str, dict[str, Any]]:
                async with a2a_client(f"{server_a.http_base}/a2a/relay", streaming=False) as client:
                    events = await send(client, user_message("6*7"))
                artifact = events[-1].task.artifacts[0]
                from google.protobuf.json_format import MessageToDict
                return artifact.parts[0].text, MessageToDict(artifact.metadata)["neuro_san"]

            text, extra = asyncio.run(scenario())
    assert text == "they say: The answer is 42."
    assert extra["sly_data"] == {"equals": 42}  # came back from B over A2A, allowed through A


def _relay(target: str) -> dict[str, Any]:
    return {
        "llm_config": {"class": "scripted"},
        "tools": [{
            "name": "relay",
            "function": {"description": "Passes the question on over A2A."},
            "instructions": "Ask the other network.",
            "tools": [target],
            "llm_config": {"class": "scripted", "reply": "they say: {results}"},
        }],
    }


def test_cancelling_a_task_cancels_the_a2a_task_it_waits_on(tmp_path: Path) -> None:
    """A on one server waits on B over A2A; cancelling A's task cancels B's, whose LLM
    connection closes."""
    with FakeInThread() as fake:
        fake.enqueue(Reply.stall(60))
        with start_server(env={"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config())}, http=True) as server_b:
            write_network(tmp_path, "relay", _relay(f"a2a+{server_b.http_base}/a2a/echo"))
            with start_server(tmp_path / "manifest.hocon", http=True) as server_a:
                async def scenario() -> None:
                    url = f"{server_a.http_base}/a2a/relay"
                    async with a2a_client(url, streaming=True) as client, a2a_client(url, streaming=False) as other:
                        stream = client.send_message(SendMessageRequest(message=user_message("slowly")))
                        first = await anext(stream)
                        await until(lambda: fake.open_connections > 0)
                        assert fake.open_connections == 1, "B's LLM call never started"
                        await other.cancel_task(CancelTaskRequest(id=first.task.id))
                        await stream.aclose()
                    await until(lambda: fake.open_connections == 0)
                    assert fake.open_connections == 0
                    assert fake.handlers_cancelled == fake.request_count == 1

                asyncio.run(scenario())


@pytest.mark.parametrize("tool, reason", [
    ("a2a+ftp://host/x", r"expected a2a\+http\(s\)://"),
    ({"a2a": "https://h/x", "headers": {"X-Key": "${NO_SUCH_VARIABLE_HERE}"}}, "NO_SUCH_VARIABLE_HERE is not set"),
    ({"a2a": "https://h/x", "headers": ["nope"]}, "must map header names"),
    ({"a2a": "https://h/x", "extra": 1}, "unknown keys"),
])
def test_bad_a2a_tool_references_are_refused_at_load(tool: Any, reason: str) -> None:
    with pytest.raises(NetworkLoadError, match=reason):
        build_network(_asker(tool), "<test>", "asker")
