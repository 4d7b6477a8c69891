"""Prometheus metrics move as requests are made."""

from __future__ import annotations

import re
import urllib.request

import grpc
import pytest

from tests.fakes.fake_llm import FakeToolCall, Reply
from tests.support import grpc_calls as calls
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import free_port, start_server


def _scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    values = {}
    for line in text.splitlines():
        match = re.match(r"^(neuro_san_[a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", line)
        if match:
            values[match.group(1)] = float(match.group(2))
    return values


@pytest.mark.slow
def test_metrics_move_with_requests() -> None:
    port = free_port()
    args = ["--metrics-port", str(port)]
    with FakeInThread() as fake, start_server(env=override_env(fake), extra_args=args) as server:
        before = _scrape(port)
        fake.enqueue(
            Reply.error(429, headers={"Retry-After": "0"}),
            Reply.calls(FakeToolCall("calculator", {"expression": "2+2"})),
            Reply.answer("four"),
        )
        with grpc.insecure_channel(server.grpc_target) as channel:
            assert calls.streaming_chat(channel, "math_guy", calls.chat_request("2+2"))[-1].response.text == "four"
            with pytest.raises(grpc.RpcError):
                calls.function(channel, "nobody", qualified=True)
        after = _scrape(port)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    assert delta('neuro_san_requests_total{agent="math_guy",code="OK",method="StreamingChat"}') == 1
    assert delta('neuro_san_requests_total{agent="unknown",code="NOT_FOUND",method="Function"}') == 1
    assert delta('neuro_san_llm_calls_total{model="fake-model",outcome="ok",provider="openai"}') == 2
    assert delta('neuro_san_llm_retries_total{provider="openai"}') == 1
    assert delta('neuro_san_tool_calls_total{kind="coded_tool",outcome="ok"}') == 1
    assert delta('neuro_san_llm_tokens_total{kind="prompt",model="fake-model",provider="openai"}') > 0
    assert after["neuro_san_active_streams"] == 0
    assert delta('neuro_san_request_seconds_count{agent="math_guy",method="StreamingChat"}') == 1
