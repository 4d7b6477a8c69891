"""Nothing secret reaches the server's log: a whole DEBUG-level run, grepped."""

from __future__ import annotations

import json

import grpc
import pytest

from tests.fakes.fake_llm import FakeToolCall, Reply
from tests.support import grpc_calls as calls
from tests.support.fake_thread import FakeInThread
from tests.support.runtime import SLY_MARKER
from tests.support.servers import start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

API_KEY = "sk-LOGSECRET-api-key-0123456789"
LLM_KEY = "sk-LOGSECRET-llm-key-0123456789"


def test_a_debug_run_logs_no_secrets() -> None:
    with FakeInThread() as fake:
        config = fake.llm_config(openai_api_key=LLM_KEY)
        env = {
            "AGENT_LLM_OVERRIDE": json.dumps(config),
            "AGENT_API_KEYS": API_KEY,
            "AGENT_SERVICE_LOG_JSON": "1",
        }
        fake.enqueue(
            Reply.calls(FakeToolCall("calculator", {"expression": "1+1"})),
            Reply.answer("two"),
            Reply.error(401, message=f"Incorrect API key provided: {LLM_KEY}"),
            Reply.error(500),
            Reply.error(500),
            Reply.error(500),
        )
        with start_server(env=env, extra_args=["--log-level", "DEBUG"]) as server:
            auth = [("authorization", f"Bearer {API_KEY}")]
            sly = {"token": SLY_MARKER + "log", "nested": {"deep": SLY_MARKER + "deep"}}
            with grpc.insecure_channel(server.grpc_target) as channel:
                request = calls.chat_request("1+1", maximal=True, sly_data=sly)
                calls.streaming_chat(channel, "math_guy", request, qualified=True, metadata=auth)
                for _ in range(2):  # an LLM auth failure, then a provider outage
                    with pytest.raises(grpc.RpcError):
                        calls.streaming_chat(channel, "echo", calls.chat_request("x", sly_data=sly), qualified=True,
                                             metadata=auth)
                with pytest.raises(grpc.RpcError):  # a wrong key
                    calls.function(channel, "echo", qualified=True)
        log = server.log()
    assert "StreamingChat" in log and '"request_id"' in log, "the run must have logged its calls"
    for secret in (API_KEY, LLM_KEY, SLY_MARKER):
        assert secret not in log, f"{secret!r} leaked into the log"
