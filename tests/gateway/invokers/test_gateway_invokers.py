"""What the gateway does inside ``neuro-san serve``, under both invokers.

The in-process invoker (the default) calls the service layer directly; the gRPC one
(``AGENT_GATEWAY_INVOKER=grpc``) goes through a channel to the same process. Admission,
draining, request ids, authentication, metrics and the message size limit must not tell
them apart. (tests/gateway/transcoder/test_gateway_http.py runs all its routes, headers, deadlines, errors
and cancellation against both too.)
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.fakes.fake_llm import Reply as LlmReply
from tests.gateway_http_support import Reply, assert_status, call, chat, wait_for
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import INVOKERS, invoker_env, start_server

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("invoker", INVOKERS)]


def _chat_in_thread(port: int, results: list[Reply], text: str = "slow") -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(chat(port, "echo", text)))
    thread.start()
    return thread


def _last_text(reply: Reply) -> str:
    return str(reply.lines()[-1]["response"]["text"])


def test_admission_cap_is_503_at_once(invoker: str) -> None:
    with FakeInThread() as fake:
        # The first chat's LLM reply is held until released (20 s at most, so a broken
        # server that queues the second chat ends the test instead of hanging it).
        fake.enqueue(LlmReply.hold(LlmReply.answer("first done"), seconds=20))
        env = {**override_env(fake), "AGENT_MAX_CONCURRENT_REQUESTS": "1", **invoker_env(invoker)}
        with start_server(env=env, http=True) as server:
            results: list[Reply] = []
            thread = _chat_in_thread(server.http_port, results)
            assert wait_for(lambda: fake.held == 1, timeout=10)
            refused = chat(server.http_port, "echo", "second")
            # Refused at once, not queued: the refusal came while the first chat was still
            # in flight (its LLM call still held), which no machine speed changes.
            assert (fake.held, fake.answered, results) == (1, 0, []), "refused at once, not queued"
            status = assert_status(refused, 503, 8)
            assert "AGENT_MAX_CONCURRENT_REQUESTS" in status["message"]
            fake.release()
            thread.join(10)
            assert [_last_text(reply) for reply in results] == ["first done"]
            assert _last_text(chat(server.http_port, "echo", "third")) == "third"


def test_sigterm_drains_http_chats_and_refuses_new_ones(invoker: str) -> None:
    with FakeInThread() as fake:
        # The in-flight chat's LLM reply is held until the drain has been checked, so the
        # checks cannot race the chat's end (20 s at most, against a hang).
        fake.enqueue(LlmReply.hold(LlmReply.answer("finished while draining"), seconds=20))
        with start_server(env={**override_env(fake), **invoker_env(invoker)}, http=True) as server:
            port = server.http_port
            results: list[Reply] = []
            thread = _chat_in_thread(port, results)
            assert wait_for(lambda: fake.held == 1, timeout=10)
            server.process.send_signal(15)
            assert wait_for(lambda: call(port, "GET", "/readyz").status == 503, timeout=10)
            # In process the probe reads the draining health service (NOT_SERVING); through
            # gRPC the stopping server already refuses the probe's call (UNREACHABLE).
            assert call(port, "GET", "/readyz").json()["serving_status"] in ("NOT_SERVING", "UNREACHABLE")
            assert_status(chat(port, "echo", "too late"), 503, 14)
            assert (fake.held, results) == (1, []), "the chat must still be in flight while draining"
            fake.release()
            thread.join(10)
            assert [_last_text(reply) for reply in results] == ["finished while draining"]
            assert server.process.wait(10) == 0


def test_request_ids_metrics_and_auth(invoker: str, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "tester", "key": "k-1", "agents": ["*"]}]}))
    env = {"AGENT_API_KEYS_FILE": str(keys), "AGENT_SERVICE_LOG_JSON": "1", **invoker_env(invoker)}
    with start_server(env=env, http=True) as server:
        port = server.http_port
        assert_status(chat(port, "hello_world", "hi", request_id="no-key-1"), 401, 16)
        assert_status(chat(port, "hello_world", "hi", Authorization="Bearer wrong"), 401, 16)
        reply = chat(port, "hello_world", "hi", Authorization="Bearer k-1", request_id="rid-42")
        assert reply.status == 200, reply.body
        assert reply.headers["Grpc-Metadata-Request-Id"] == "rid-42"
        made_up = chat(port, "hello_world", "hi", Authorization="Bearer k-1")
        assert len(made_up.headers["Grpc-Metadata-Request-Id"]) == 16
        metrics = call(port, "GET", "/metrics").body.decode()
        assert 'route="StreamingChat"' in metrics or "StreamingChat" in metrics
        assert wait_for(lambda: '"request_id": "rid-42"' in server.log(), timeout=5)
        logged = [json.loads(line) for line in server.log().splitlines() if '"rid-42"' in line]
        assert any(entry.get("status") == "OK" and entry.get("method") == "StreamingChat" for entry in logged)
