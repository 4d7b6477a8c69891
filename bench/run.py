"""``python -m bench.run`` (``make bench``): every scenario, one table, one JSON file.

Starts the fake LLM, ``neuro-san serve`` (gRPC + gateway), the bare floor servers and a
load generator per run, all on loopback, as separate processes. Each scenario runs
``--runs`` times (default 3) and reports the median of each figure. The server's CPU per
chat comes from /proc/<pid>/stat over the measured window; memory from
/proc/<pid>/status. ``--smoke`` runs everything very briefly (CI keeps the suite from
rotting); nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import procs
from bench.table import render_table

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS = ("startup", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "limiter")
#: What each scenario measures (``--help``; docs/performance.md has the method).
SCENARIO_HELP = {
    "startup": "three fresh servers: spawn to GET /healthz 200, idle RSS, one chat",
    "S1": "echo, 1 client back to back, HTTP, 5 s: latency p50/p99, server CPU per chat",
    "S2": "echo (one LLM call), 16 clients, HTTP, 15 s: chats/s, CPU per chat",
    "S3": "math_guy (two LLM calls and a coded tool), 16 clients, HTTP, 15 s",
    "S4": "echo, 16 clients, gRPC, 15 s (S4/S2: the gateway's cost)",
    "S5": "2,000 chats at once, the fake LLM taking 1 s: completed, p99, peak RSS",
    "S6": "the floors: bare aiohttp and grpc.aio servers under S2/S4's load and S5's burst",
    "S7": "10,000 HTTP chats at once, 5 s LLM, on one loop and on --workers auto, and on the bare aiohttp floor",
    "S8": "S2 and S5's burst against serve --workers auto and --workers 1, the burst's floor on as many processes",
    "S9": "token streaming: a 50-word answer paced 20 ms per word, time to first token",
    "S10": "the protocol front-ends (MCP, A2A, OpenAI, AG-UI) beside REST, and A2A's three bindings beside the"
    " a2a-sdk's own server: echo, 16 clients, CPU per call",
    "limiter": "the per-caller rate limiter and token budget's cost per chat",
}
EPILOG = "scenarios:\n" + "\n".join(f"  {name:<8} {text}" for name, text in SCENARIO_HELP.items()) + (
    "\n\nHow long: --smoke under a minute; a full run (3 runs of each) is many minutes (about 8 before"
    "\nS7-S9 existed, docs/performance.md); every run prints its wall time and keeps it as wall_s."
    "\nNothing asserts a timing: compare runs taken back to back."
)


@dataclass(frozen=True)
class Settings:
    runs: int = 3
    s1_seconds: float = 5.0
    load_seconds: float = 15.0
    clients: int = 16
    s5_chats: int = 2000
    s5_latency_ms: float = 1000.0
    floor_seconds: float = 10.0
    startups: int = 3
    warmup: int = 2
    s7_chats: int = 10_000
    s7_latency_ms: float = 5000.0
    #: S9: the words of a streamed answer, and the fake LLM's pace between them.
    s9_words: int = 50
    s9_pace_ms: float = 20.0


SMOKE = Settings(
    runs=1, s1_seconds=1.0, load_seconds=1.0, s5_chats=200, s5_latency_ms=300.0, floor_seconds=1.0, startups=1,
    warmup=1, s7_chats=300, s7_latency_ms=300.0, s9_words=10,
)  # fmt: skip


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per key, the median of the runs' numbers (other values from the first run)."""
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            merged[key] = statistics.median(run[key] for run in runs)
        else:
            merged[key] = value
    return merged


def repeat(runs: int, once: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    results = [once() for _ in range(runs)]
    return {**median_of(results), "runs": results}


def closed_spec(transport: str, target: str, agent: str, clients: int, seconds: float, s: Settings, fast: bool) -> (
    dict[str, Any]
):
    return {
        "transport": transport, "target": target, "agent": agent, "text": "hello, benchmark",
        "mode": "closed", "clients": clients, "duration": seconds, "warmup": s.warmup, "uvloop": fast,
    }  # fmt: skip


def measure_startup(fake_port: int, s: Settings, fast: bool) -> tuple[dict[str, Any], procs.Server]:
    """Start the server ``startups`` times: time to READY and healthy, idle RSS, first chat.
    The last server is kept for S1-S4."""
    runs: list[dict[str, Any]] = []
    server: procs.Server | None = None
    for index in range(s.startups):
        server = procs.start_server(fake_port, fast)
        time.sleep(0.5)  # let start-up garbage settle before calling it idle
        idle = procs.memory_mib(server.proc.pid)
        spec = closed_spec("http", server.http_base, "echo", 1, 60, s, fast)
        first = procs.run_load({**spec, "count": 1, "warmup": 0})
        runs.append(
            {
                "ready_s": server.ready_s,
                "healthy_s": server.healthy_s,
                "idle_rss_mib": idle["rss_mib"],
                "first_chat_ms": first["p50_ms"],
                "first_chat_ok": first["completed"] == 1,
            }
        )
        if index < s.startups - 1:
            server.proc.stop()
    assert server is not None
    return {**median_of(runs), "runs": runs}, server


def run_all(s: Settings, fast: bool, only: frozenset[str] = frozenset(SCENARIOS)) -> dict[str, Any]:
    results: dict[str, Any] = {}
    if only & {"startup", "S1", "S2", "S3", "S4"}:
        run_main_server(s, fast, only, results)
    if "S5" in only:
        results["S5"] = run_s5(s, fast)
    if "S6" in only:
        results["S6"] = run_floors(s, fast, results)
    from bench.scale import run_s7, run_s8  # they build on this module's helpers

    if "S7" in only:
        results["S7"] = run_s7(s, fast)
    if "S8" in only:
        results["S8"] = run_s8(s, fast)
        if "S6" in results:
            # S5's burst on --workers auto against the one-process bare aiohttp burst of S6
            # (issue 27's comparison; issue 37 judges it against the floor on as many processes).
            results["S8"]["burst_workers_auto_to_http_burst"] = _ratio(
                results["S8"]["burst_workers_auto"]["p99_ms"], results["S6"]["burst_http"]["p99_ms"]
            )
    if "S9" in only:
        from bench.tokens import run_s9  # it builds on this module's helpers, as bench.scale does

        results["S9"] = run_s9(s, fast)
    if "S10" in only:
        from bench.frontends import run_s10  # it builds on this module's helpers, as bench.scale does

        results["S10"] = run_s10(s, fast)
    if "limiter" in only:
        from bench.limiter import run_limiter

        results["limiter"] = run_limiter(s is SMOKE)
    return results


def run_main_server(s: Settings, fast: bool, only: frozenset[str], results: dict[str, Any]) -> None:
    """Start-up, then S1-S4 on the last server started (one fake LLM, no latency)."""
    fake, fake_port = procs.start_fake(0.0, fast)
    try:
        results["startup"], server = measure_startup(fake_port, s, fast)
        pid = server.proc.pid
        try:
            http, grpc_target = server.http_base, server.grpc_target
            loads = {
                "S1": closed_spec("http", http, "echo", 1, s.s1_seconds, s, fast),
                "S2": closed_spec("http", http, "echo", s.clients, s.load_seconds, s, fast),
                "S3": closed_spec("http", http, "math_guy", s.clients, s.load_seconds, s, fast),
                "S4": closed_spec("grpc", grpc_target, "echo", s.clients, s.load_seconds, s, fast),
            }
            for name, spec in loads.items():
                if name in only:
                    results[name] = repeat(s.runs, lambda: procs.run_load(spec, pid, fake_pid=fake.pid))  # noqa: B023
                if name == "S2" and name in only:
                    results["startup"]["rss_after_s2_mib"] = procs.memory_mib(pid)["rss_mib"]
            if "S2" in results and "S4" in results:
                results["S4"]["ratio_to_s2"] = _ratio(results["S4"]["chats_per_s"], results["S2"]["chats_per_s"])
                # The same chat over gRPC and over HTTP (in-process gateway), same server, same run.
                results["S4"]["cpu_over_s2_ms"] = results["S4"]["cpu_ms_per_chat"] - results["S2"]["cpu_ms_per_chat"]
        finally:
            server.proc.stop()
    finally:
        fake.stop()


def run_s5(s: Settings, fast: bool) -> dict[str, Any]:
    """A burst of ``s5_chats`` concurrent HTTP chats against an LLM taking ``s5_latency_ms``."""
    fake, fake_port = procs.start_fake(s.s5_latency_ms, fast)
    try:
        server = procs.start_server(fake_port, fast)
        try:
            spec = {
                **closed_spec("http", server.http_base, "echo", 1, 0, s, fast),
                "mode": "burst", "count": s.s5_chats, "warmup": 1,
            }  # fmt: skip
            result = repeat(s.runs, lambda: procs.run_load(spec, server.proc.pid, 600, fake.pid))
            result["peak_rss_mib"] = procs.memory_mib(server.proc.pid)["peak_rss_mib"]
            result["chats"] = s.s5_chats
            result["llm_latency_ms"] = s.s5_latency_ms
        finally:
            server.proc.stop()
    finally:
        fake.stop()
    return result


def run_floors(s: Settings, fast: bool, results: dict[str, Any]) -> dict[str, Any]:
    floors: dict[str, Any] = {}
    for kind in ("http", "grpc"):
        floor, port = procs.start_floor(kind, fast)
        try:
            target = f"http://127.0.0.1:{port}" if kind == "http" else f"127.0.0.1:{port}"
            spec = closed_spec(kind, target, "echo", s.clients, s.floor_seconds, s, fast)
            floors[kind] = repeat(s.runs, lambda: procs.run_load(spec, floor.pid))  # noqa: B023
        finally:
            floor.stop()
    # S2's framework floor: the HTTP floor plus one LLM call through aiohttp's client.
    fake, fake_port = procs.start_fake(0.0, fast)
    try:
        floor, port = procs.start_floor("http-llm", fast, llm_url=f"http://127.0.0.1:{fake_port}/v1")
        try:
            spec = closed_spec("http", f"http://127.0.0.1:{port}", "echo", s.clients, s.floor_seconds, s, fast)
            floors["http_llm"] = repeat(s.runs, lambda: procs.run_load(spec, floor.pid, fake_pid=fake.pid))
        finally:
            floor.stop()
    finally:
        fake.stop()
    # S5's burst on the frameworks-only chat: the bare aiohttp handler making its one LLM call
    # to a fake taking S5's latency, through a pool that (as ours) holds only the warm-up's
    # connections when the burst starts. Against burst_http (no LLM call) and S5 (our code),
    # it says how much of S5's tail is opening ~2,000 new LLM connections on one loop.
    fake, fake_port = procs.start_fake(s.s5_latency_ms, fast)
    try:
        floor, port = procs.start_floor("http-llm", fast, llm_url=f"http://127.0.0.1:{fake_port}/v1")
        try:
            spec = {
                **closed_spec("http", f"http://127.0.0.1:{port}", "echo", 1, 0, s, fast),
                "mode": "burst", "count": s.s5_chats, "warmup": 1,
            }  # fmt: skip
            floors["burst_http_llm"] = repeat(s.runs, lambda: procs.run_load(spec, floor.pid, 600, fake.pid))
        finally:
            floor.stop()
    finally:
        fake.stop()
    # S5's floor: the same burst against bare servers that only wait out the LLM latency.
    for kind in ("grpc", "http"):
        floor, port = procs.start_floor(kind, fast, s.s5_latency_ms)
        try:
            target = f"http://127.0.0.1:{port}" if kind == "http" else f"127.0.0.1:{port}"
            spec = {**closed_spec(kind, target, "echo", 1, 0, s, fast), "mode": "burst", "count": s.s5_chats}
            floors[f"burst_{kind}"] = repeat(s.runs, lambda: procs.run_load(spec, floor.pid, 600))  # noqa: B023
        finally:
            floor.stop()
    if "S5" in results and floors["burst_http_llm"]["p99_ms"]:
        floors["s5_p99_to_http_llm_burst"] = _ratio(results["S5"]["p99_ms"], floors["burst_http_llm"]["p99_ms"])
    if "S5" in results:
        # Issue 27's burst target: S5 p99 <= 1.5 x the bare aiohttp server's p99 for the same burst.
        floors["s5_p99_to_http_burst"] = _ratio(results["S5"]["p99_ms"], floors["burst_http"]["p99_ms"])
    if "S2" in results:
        floors["s2_fraction_of_http_floor"] = _ratio(results["S2"]["chats_per_s"], floors["http"]["chats_per_s"])
        # What our code adds per chat on top of the frameworks' own cost for S2's two HTTP exchanges.
        floors["s2_cpu_over_http_llm_floor_ms"] = (
            results["S2"]["cpu_ms_per_chat"] - floors["http_llm"]["cpu_ms_per_chat"]
        )
    if "S4" in results:
        floors["s4_fraction_of_grpc_floor"] = _ratio(results["S4"]["chats_per_s"], floors["grpc"]["chats_per_s"])
    # What gRPC costs more than HTTP per echo with neither framework running our code.
    floors["grpc_over_http_floor_ms"] = floors["grpc"]["cpu_ms_per_chat"] - floors["http"]["cpu_ms_per_chat"]
    if "S4" in results and "cpu_over_s2_ms" in results["S4"]:
        # Issue 27's target: S4 <= S2 + the floors' difference, i.e. this <= 0.
        floors["s4_over_s2_beyond_floors_ms"] = results["S4"]["cpu_over_s2_ms"] - floors["grpc_over_http_floor_ms"]
    return floors


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def uvloop_installed() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--smoke", action="store_true", help="every scenario, very briefly (under a minute)")
    parser.add_argument("--runs", type=int, default=None, help="runs per scenario (median reported; default 3)")
    parser.add_argument("--no-uvloop", action="store_true", help="run every process on asyncio's own loop")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for <timestamp>.json and latest.json")
    parser.add_argument(
        "--only", default=",".join(SCENARIOS), help=f"comma-separated subset of {','.join(SCENARIOS)}"
    )
    args = parser.parse_args(argv)
    only = frozenset(name.strip() for name in args.only.split(",") if name.strip())
    unknown = only - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    settings = SMOKE if args.smoke else Settings()
    if args.runs:
        settings = Settings(**{**asdict(settings), "runs": args.runs})
    fast = uvloop_installed() and not args.no_uvloop
    started = time.monotonic()
    scenarios = run_all(settings, fast, only)
    report = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "event_loop": "uvloop" if fast else "asyncio",
        },
        "smoke": args.smoke,
        "settings": asdict(settings),
        "wall_s": time.monotonic() - started,
        "scenarios": scenarios,
    }
    print(render_table(report))
    args.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2)
    (args.out / f"{report['timestamp'].replace(':', '')}.json").write_text(text)
    (args.out / "latest.json").write_text(text)
    print(f"\nwritten: {args.out / 'latest.json'} ({report['wall_s']:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
