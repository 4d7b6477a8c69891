"""S7 and S8: scale. S7 is a burst of 10,000 chats at once; S8 is S2 and S5's burst on --workers auto.

- **S7**: ``s7_chats`` HTTP chats started at once against a fake LLM taking
  ``s7_latency_ms`` (5 s) per call, on a server of its own (its peak RSS, VmHWM, is
  S7's); then the same burst against the bare aiohttp floor, which only sleeps as long.
  One run only: each burst opens ~2 × 10,000 loopback connections, and their TIME_WAIT
  states would eat the ephemeral ports of a second run. The server keeps its LLM
  connections within its file-descriptor limit (``AGENT_LLM_MAX_CONNECTIONS``, see
  :func:`llm_connections_for`): 10,000 client sockets plus 10,000 LLM sockets do not fit
  under a 20,000 descriptor limit, so the chats past it wait for a free LLM connection.
  Then the same burst once more on ``serve --workers auto`` (one loop per core, the
  production setting), against the bare aiohttp floor on as many processes sharing one
  port: issue 37 judges S7's burst there (p99 <= 2x that floor's).
- **S8**: S2 (echo, 16 clients, HTTP) against ``serve --workers auto`` and ``--workers 1``,
  back to back. Server CPU is the parent's plus its workers'. Then S5's burst (2,000 chats
  at once, 1 s LLM) against ``--workers auto`` and ``--workers 1``, and against the bare
  aiohttp floor on as many processes: issue 37 judges S5's burst there (p99 <= 1.5x).
"""

from __future__ import annotations

import resource
from typing import Any

from bench import procs
from bench.run import Settings, _ratio, closed_spec, repeat
from neuro_san.cli.workers import parse_workers

#: ``--workers auto``: one process per core this machine lets us run on.
AUTO = parse_workers("auto")

#: The bench's chats are REST ones: A2A, whose tasks several workers could share only through
#: Redis (``serve --workers`` refuses it otherwise), is off on the servers S7 and S8 compare
#: across worker counts (on both sides of S8's comparisons).
WORKERS_ENV = {"AGENT_A2A_ENABLE": "false"}

#: Descriptors a server needs beyond its client and LLM sockets (files, pipes, grpc).
_SPARE_DESCRIPTORS = 512


def llm_connections_for(chats: int) -> int:
    """LLM connections a server may open next to ``chats`` client connections."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return chats
    return max(64, min(chats, soft - chats - _SPARE_DESCRIPTORS))


def run_s7(s: Settings, fast: bool) -> dict[str, Any]:
    llm_connections = llm_connections_for(s.s7_chats)
    fake, fake_port = procs.start_fake(s.s7_latency_ms, fast)
    try:
        result = _s7_burst(s, fast, fake, fake_port, llm_connections, workers=1)
        # Issue 37 judges the burst on --workers auto: one loop per core, one run (each process
        # holds its share of the client and LLM sockets).
        result["workers_auto"] = _s7_burst(s, fast, fake, fake_port, llm_connections, workers=AUTO)
    finally:
        fake.stop()
    floor, port = procs.start_floor("http", fast, s.s7_latency_ms)
    try:
        spec = {
            **closed_spec("http", f"http://127.0.0.1:{port}", "echo", 1, 0, s, fast),
            "mode": "burst", "count": s.s7_chats,
        }  # fmt: skip
        result["floor"] = repeat(1, lambda: procs.run_load(spec, floor.pid, 900))
        result["floor"]["peak_rss_mib"] = procs.memory_mib(floor.pid)["peak_rss_mib"]
    finally:
        floor.stop()
    result["floor_auto"] = _floor_burst(s, fast, s.s7_latency_ms, s.s7_chats, 900)
    result["chats"] = s.s7_chats
    result["llm_latency_ms"] = s.s7_latency_ms
    result["llm_connections"] = llm_connections
    result["p99_to_floor"] = _ratio(result["p99_ms"], result["floor"]["p99_ms"])
    result["workers_auto_to_floor_auto"] = _ratio(result["workers_auto"]["p99_ms"], result["floor_auto"]["p99_ms"])
    result["processes"] = AUTO
    return result


def _floor_burst(s: Settings, fast: bool, latency_ms: float, chats: int, timeout: float) -> dict[str, Any]:
    """One burst of ``chats`` against the bare aiohttp floor on ``AUTO`` processes sharing a
    port, each waiting ``latency_ms`` per chat: the floor of a burst on ``--workers auto``."""
    floors, port = procs.start_floors(AUTO, fast, latency_ms)
    try:
        spec = {
            **closed_spec("http", f"http://127.0.0.1:{port}", "echo", 1, 0, s, fast),
            "mode": "burst", "count": chats,
        }  # fmt: skip
        return repeat(1, lambda: procs.run_load(spec, None, timeout))
    finally:
        for floor in floors:
            floor.stop()


def _s7_burst(
    s: Settings, fast: bool, fake: procs.Proc, fake_port: int, llm_connections: int, workers: int
) -> dict[str, Any]:
    """One S7 burst against a fresh ``serve --workers <workers>`` (fresh ports: the last
    burst's TIME_WAIT states are on the old ones)."""
    env = {"AGENT_LLM_MAX_CONNECTIONS": str(llm_connections), **(WORKERS_ENV if workers > 1 else {})}
    server = procs.start_server(fake_port, fast, extra_env=env, extra_args=["--workers", str(workers)])
    try:
        spec = {
            **closed_spec("http", server.http_base, "echo", 1, 0, s, fast),
            "mode": "burst", "count": s.s7_chats, "warmup": 1,
        }  # fmt: skip
        result = repeat(1, lambda: procs.run_load(spec, server.proc.pid, 900, fake.pid))
        if workers == 1:  # S7's memory target is one process's (a parent's VmHWM is not its workers')
            result["peak_rss_mib"] = procs.memory_mib(server.proc.pid)["peak_rss_mib"]
        return result
    finally:
        server.proc.stop()


def run_s8(s: Settings, fast: bool) -> dict[str, Any]:
    results: dict[str, Any] = {}
    fake, fake_port = procs.start_fake(0.0, fast)
    try:
        for label, workers in (("auto", AUTO), ("1", 1)):
            server = procs.start_server(fake_port, fast, WORKERS_ENV, extra_args=["--workers", str(workers)])
            try:
                spec = closed_spec("http", server.http_base, "echo", s.clients, s.load_seconds, s, fast)
                results[f"workers_{label}"] = repeat(
                    s.runs, lambda: procs.run_load(spec, server.proc.pid, fake_pid=fake.pid)  # noqa: B023
                )
            finally:
                server.proc.stop()
    finally:
        fake.stop()
    results["speedup"] = _ratio(results["workers_auto"]["chats_per_s"], results["workers_1"]["chats_per_s"])
    results["processes"] = AUTO
    results.update(_s5_on_workers(s, fast))
    return results


def _s5_on_workers(s: Settings, fast: bool) -> dict[str, Any]:
    """S5's burst against ``--workers auto`` and ``--workers 1``, back to back (what more
    loops do to a burst's tail), then against the bare floor on as many processes."""
    results: dict[str, Any] = {}
    fake, fake_port = procs.start_fake(s.s5_latency_ms, fast)
    try:
        for label, workers in (("auto", AUTO), ("1", 1)):
            server = procs.start_server(fake_port, fast, WORKERS_ENV, extra_args=["--workers", str(workers)])
            try:
                spec = {
                    **closed_spec("http", server.http_base, "echo", 1, 0, s, fast),
                    "mode": "burst", "count": s.s5_chats, "warmup": 1,
                }  # fmt: skip
                results[f"burst_workers_{label}"] = repeat(
                    s.runs, lambda: procs.run_load(spec, server.proc.pid, 600, fake.pid)  # noqa: B023
                )
            finally:
                server.proc.stop()
    finally:
        fake.stop()
    results["burst_p99_ratio"] = _ratio(
        results["burst_workers_auto"]["p99_ms"], results["burst_workers_1"]["p99_ms"]
    )
    results["burst_floor_auto"] = _floor_burst(s, fast, s.s5_latency_ms, s.s5_chats, 600)
    results["burst_auto_to_floor_auto"] = _ratio(
        results["burst_workers_auto"]["p99_ms"], results["burst_floor_auto"]["p99_ms"]
    )
    return results

