"""A network and coded tool written for neuro-san run unchanged on our server, with
OPENAI_API_BASE pointed at the fake LLM (a real server process, real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply
from tests.support import grpc_calls as calls
from tests.support.fake_thread import FakeInThread
from tests.support.servers import start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "neuro_san_style"


@pytest.fixture()
def fake_llm() -> Iterator[FakeLlmServer]:
    with FakeInThread() as fake:
        yield fake


def test_upstream_style_network_runs_unchanged(fake_llm: FakeLlmServer) -> None:
    fake_llm.enqueue(
        Reply.calls(FakeToolCall("adder", {"numbers": "1 2 3.5"})),
        Reply.answer("The total is 6.5."),
    )
    env = {
        "OPENAI_API_BASE": fake_llm.openai_base,
        "OPENAI_API_KEY": "sk-test-key",
        "AGENT_TOOL_PATH": str(FIXTURES / "coded_tools"),
    }
    with start_server(manifest=FIXTURES / "manifest.hocon", env=env) as server:
        with grpc.insecure_channel(server.grpc_target) as channel:
            request = calls.chat_request("add 1 2 3.5", sly_data={"running_total": 10})
            final = calls.streaming_chat(channel, "upstream_math", request)[-1].response
    assert final.text == "The total is 6.5."
    assert calls.as_dict(final)["sly_data"] == {"running_total": 16.5}
    first = fake_llm.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-test-key"
    assert first.body["model"] == "gpt-4o-2024-08-06"  # neuro-san's table: gpt-4o is an alias
    assert first.body["messages"][0] == {
        "role": "system",
        "content": "You are a careful accountant. Use the adder for every sum.",
    }
    assert first.body["tools"][0]["function"]["parameters"]["properties"]["numbers"]["type"] == "string"
    assert "use_responses_api" not in first.body
