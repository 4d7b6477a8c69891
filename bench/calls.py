"""Work per chat that a loaded machine cannot distort: ``python -m bench.calls --scenario S4``.

Timings on shared cores move with whatever else runs; the number of Python function calls
(and C functions called from Python) a chat costs does not. This starts the fake LLM and
``neuro-san serve`` like ``bench.run``, with the server wrapped so that SIGUSR1 switches
cProfile on in its event-loop thread and SIGUSR2 switches it off and writes the stats;
drives ``--chats`` chats of a scenario (S2: echo over HTTP; S3: math_guy over HTTP; S4:
echo over gRPC) between the two signals, after a warm-up, and prints calls per chat: in
all, by area (the areas of ``bench.profile``), and the functions called most.

cProfile's own timings are not reported: it slows every call, unevenly. Only the counts
(``ncalls``, resumptions of coroutines and generators included) are read. grpc's poller
thread and C core are not Python and are not counted: syscalls per chat
(``strace -f -c -p <server>``, see docs/performance.md) cover them.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from bench import procs
from bench.profile import AREAS, LOADS
from bench.run import Settings, closed_spec

#: Where the wrapped server writes its stats (set by the orchestrator).
STATS_ENV = "BENCH_CALLS_STATS"


def wrapped_serve(argv: list[str]) -> int:
    """The server process: ``neuro-san <argv>`` with cProfile behind SIGUSR1 / SIGUSR2."""
    out = Path(os.environ[STATS_ENV])
    profiler = cProfile.Profile()

    def start(_signum: int, _frame: FrameType | None) -> None:
        profiler.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        profiler.disable()
        partial = out.with_suffix(".part")
        profiler.dump_stats(str(partial))
        partial.rename(out)  # whole or absent: the orchestrator polls for it

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from neuro_san.cli.main import main

    return int(main(argv) or 0)


def _area(filename: str, function: str) -> str:
    where = f"{filename}:{function}"
    for area, needles in AREAS:
        if any(needle in where for needle in needles):
            return area
    return "builtins and C functions" if filename == "~" else "other Python"


def _name(filename: str, line: int, function: str) -> str:
    if filename == "~":
        return function
    for marker in ("site-packages/", f"{procs.ROOT}/", "/lib/python3."):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{filename}:{line}({function})"


def report(stats_path: Path, chats: int, top: int, grep: str = "") -> str:
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(str(stats_path)).stats  # type: ignore[attr-defined]
    by_area: Counter[str] = Counter()
    by_function: Counter[str] = Counter()
    total = 0
    for (filename, line, function), (_primitive, calls, *_rest) in stats.items():
        total += calls
        by_area[_area(filename, function)] += calls
        by_function[_name(filename, line, function)] += calls
    lines = [f"{chats} chats; {total / chats:,.0f} Python and C function calls per chat", "", "by area:"]
    lines += [f"  {n / chats:8.1f}  {area}" for area, n in by_area.most_common()]
    lines += ["", "most called (per chat):"]
    lines += [f"  {n / chats:8.2f}  {name}" for name, n in by_function.most_common(top)]
    if grep:
        lines += ["", f"every function matching {grep!r} (per chat):"]
        lines += [f"  {n / chats:8.2f}  {name}" for name, n in by_function.most_common() if grep in name]
    return "\n".join(lines)


def _wait_for(path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server wrote no stats to {path}")
        time.sleep(0.05)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scenario", choices=sorted(LOADS), default="S4")
    parser.add_argument("--chats", type=int, default=2000)
    parser.add_argument("--top", type=int, default=60)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)")
    parser.add_argument("--grep", default="", help="also list every function whose name contains this, per chat")
    parser.add_argument("--wrap", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.wrap is not None:
        return wrapped_serve(args.wrap)
    transport, agent = LOADS[args.scenario]
    stats_path = Path(tempfile.mkdtemp(prefix="bench-calls-")) / "server.prof"
    extra_env = dict(item.split("=", 1) for item in args.env)
    fake, fake_port = procs.start_fake(0.0, True)
    wrapper = [sys.executable, "-m", "bench.calls", "--wrap"]
    server = procs.start_server(fake_port, True, {**extra_env, STATS_ENV: str(stats_path)}, launcher=wrapper)
    try:
        target = server.grpc_target if transport in ("grpc", "a2a_grpc") else server.http_base
        spec = {**closed_spec(transport, target, agent, 16, 600, Settings(), True), "count": args.chats}
        load = procs.Proc.start([sys.executable, "-m", "bench.load", json.dumps(spec)], stdin=True)
        try:
            load.wait_for("READY", 120)
            os.kill(server.proc.pid, signal.SIGUSR1)
            time.sleep(0.2)  # the handler runs between two bytecodes of the loop thread
            load.send_line()
            result = json.loads(load.wait_for("RESULT ", 600)[len("RESULT ") :])
            os.kill(server.proc.pid, signal.SIGUSR2)
            _wait_for(stats_path, 60)
        finally:
            load.stop()
    finally:
        server.proc.stop()
        fake.stop()
    if result["failed"]:
        print(f"warning: {result['failed']} chats failed: {result['failure_kinds']}", file=sys.stderr)
    print(report(stats_path, result["completed"], args.top, args.grep))
    print(f"stats: {stats_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
