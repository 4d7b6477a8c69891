"""S9: token streaming (issue 26). The fake LLM streams an ``s9_words``-word answer, one
word each ``s9_pace_ms``; chats ask for ``stream_tokens``. Reported, never asserted: the time to the
first delta (p50/p90, with the pace as its floor), the server's CPU per streamed token
(its CPU over the window divided by the words the model wrote; deltas waiting for a slow
reader join, so there may be fewer delta messages than words), the same load's CPU
per chat without ``stream_tokens`` for comparison, and S5's burst with ``stream_tokens``.
Its floor (issue 37): the bare relay (``bench.floor relay``: read one SSE event from the
fake, write one NDJSON line), under the same load, CPU per token the same way; the rows say
our CPU per token over the relay's (target 1.5x).
"""

from __future__ import annotations

from typing import Any

from bench import procs
from bench.run import Settings, closed_spec, repeat


def run_s9(s: Settings, fast: bool) -> dict[str, Any]:
    stream = ("--stream-words", str(s.s9_words), "--stream-pace-ms", str(s.s9_pace_ms))
    fake, fake_port = procs.start_fake(0.0, fast, *stream)
    result: dict[str, Any] = {"words": s.s9_words, "pace_ms": s.s9_pace_ms}
    try:
        server = procs.start_server(fake_port, fast)
        pid = server.proc.pid
        try:
            for transport, target in (("http", server.http_base), ("grpc", server.grpc_target)):
                spec = closed_spec(transport, target, "echo", s.clients, s.load_seconds, s, fast)
                spec["stream_tokens"] = True
                measured = repeat(s.runs, lambda: procs.run_load(spec, pid, fake_pid=fake.pid))  # noqa: B023
                # Per token the model wrote (WORDS a chat), however many deltas carried them.
                tokens = measured["completed"] * s.s9_words
                measured["cpu_us_per_token"] = measured["server_cpu_s"] * 1e6 / tokens if tokens else 0.0
                chats = measured["completed"]
                measured["deltas_per_chat"] = measured["deltas"] / chats if chats else 0.0
                result[transport] = measured
            # The same chats without stream_tokens: the answer comes whole (no pace).
            plain = closed_spec("http", server.http_base, "echo", s.clients, s.load_seconds, s, fast)
            result["http_whole"] = repeat(s.runs, lambda: procs.run_load(plain, pid, fake_pid=fake.pid))
            burst = {
                **closed_spec("http", server.http_base, "echo", 1, 0, s, fast),
                "mode": "burst", "count": s.s5_chats, "warmup": 1, "stream_tokens": True,
            }  # fmt: skip
            result["burst"] = repeat(s.runs, lambda: procs.run_load(burst, pid, 600, fake.pid))
            result["burst"]["chats"] = s.s5_chats
        finally:
            server.proc.stop()
        result["relay"] = _relay(s, fast, fake, fake_port)
    finally:
        fake.stop()
    relay_us = result["relay"]["cpu_us_per_token"]
    for transport in ("http", "grpc"):
        result[transport]["cpu_to_relay"] = result[transport]["cpu_us_per_token"] / relay_us if relay_us else 0.0
    return result


def _relay(s: Settings, fast: bool, fake: procs.Proc, fake_port: int) -> dict[str, Any]:
    """The bare relay under S9's load: CPU per token the model wrote, as for ours."""
    floor, port = procs.start_floor("relay", fast, llm_url=f"http://127.0.0.1:{fake_port}/v1")
    try:
        spec = closed_spec("http", f"http://127.0.0.1:{port}", "echo", s.clients, s.load_seconds, s, fast)
        spec["stream_tokens"] = True
        measured = repeat(s.runs, lambda: procs.run_load(spec, floor.pid, fake_pid=fake.pid))
    finally:
        floor.stop()
    tokens = measured["completed"] * s.s9_words
    measured["cpu_us_per_token"] = measured["server_cpu_s"] * 1e6 / tokens if tokens else 0.0
    return measured
