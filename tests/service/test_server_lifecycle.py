"""Admission and graceful shutdown of a real server process."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.fakes.fake_llm import Reply
from tests.support import grpc_calls as calls
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import start_server
from tests.support.waits import wait_until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


def _chat_in_thread(target: str, results: list[object], text: str = "slow") -> threading.Thread:
    def run() -> None:
        with grpc.insecure_channel(target) as channel:
            try:
                results.append(calls.streaming_chat(channel, "echo", calls.chat_request(text))[-1].response.text)
            except grpc.RpcError as error:
                results.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_concurrency_cap_refuses_at_once() -> None:
    with FakeInThread() as fake:
        # The first chat's LLM reply is held until released (20 s at most, so a broken
        # server that queues the second chat ends the test instead of hanging it).
        fake.enqueue(Reply.hold(Reply.answer("first done"), seconds=20))
        env = {**override_env(fake), "AGENT_MAX_CONCURRENT_REQUESTS": "1"}
        with start_server(env=env) as server:
            results: list[object] = []
            thread = _chat_in_thread(server.grpc_target, results)
            assert wait_until(lambda: fake.held == 1), "the first chat never reached its LLM"
            with grpc.insecure_channel(server.grpc_target) as channel:
                with pytest.raises(grpc.RpcError) as info:
                    calls.streaming_chat(channel, "echo", calls.chat_request("second"))
                # Refused at once, not queued: the refusal came while the first chat was
                # still in flight (its LLM call still held), which no machine speed changes.
                assert (fake.held, fake.answered, results) == (1, 0, []), "refused at once, not queued"
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "AGENT_MAX_CONCURRENT_REQUESTS" in info.value.details()
            fake.release()
            thread.join(10)
            assert results == ["first done"]
            with grpc.insecure_channel(server.grpc_target) as channel:  # a place is free again
                assert calls.streaming_chat(channel, "echo", calls.chat_request("third"))[-1].response.text == "third"


def test_sigterm_drains_in_flight_chats_and_refuses_new_ones() -> None:
    with FakeInThread() as fake:
        # The in-flight chat's LLM reply is held until the drain has been checked, so the
        # checks cannot race the chat's end (20 s at most, against a hang).
        fake.enqueue(Reply.hold(Reply.answer("finished while draining"), seconds=20))
        with start_server(env=override_env(fake)) as server:
            results: list[object] = []
            thread = _chat_in_thread(server.grpc_target, results)
            assert wait_until(lambda: fake.held == 1), "the chat never reached its LLM"
            with grpc.insecure_channel(server.grpc_target) as channel:
                health = health_pb2_grpc.HealthStub(channel)
                server.process.send_signal(15)
                deadline = time.monotonic() + 10
                status = None
                while time.monotonic() < deadline:
                    try:
                        status = health.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    except grpc.RpcError:
                        break  # already refusing everything
                    if status == health_pb2.HealthCheckResponse.NOT_SERVING:
                        break
                    time.sleep(0.02)
                with pytest.raises(grpc.RpcError) as info:
                    calls.streaming_chat(channel, "echo", calls.chat_request("too late"))
                assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert (fake.held, results) == (1, []), "the chat must still be in flight while draining"
            fake.release()
            thread.join(10)
            assert results == ["finished while draining"]
            assert server.process.wait(10) == 0
