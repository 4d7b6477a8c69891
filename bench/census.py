"""What a chat in flight keeps alive: ``python -m bench.census [--chats 1000]``.

In a burst every chat's objects stay alive until its LLM answers, and the cyclic collector
walks each tracked one (generation 0, then 1) whatever its thresholds: its share of a burst's
CPU is proportional to the tracked objects per chat in flight (docs/performance.md, "Second
session"). This counts them, a figure load cannot move: the fake LLM answers after
``--latency-ms`` (long enough for the whole burst to be waiting on it), the server is wrapped
so that SIGUSR1 writes ``gc.get_objects()`` by type, and the census is taken once idle after a
warm-up chat and once with ``--chats`` HTTP echo chats (S5's) waiting on the LLM. Prints the
difference per chat, by type; coroutines also by the module that defines them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import CellType, CoroutineType, FrameType, GeneratorType, MethodType

from bench import procs
from bench.run import Settings, closed_spec

#: Where the wrapped server writes each census (set by the orchestrator).
CENSUS_ENV = "BENCH_CENSUS_DIR"


def _census() -> Counter[str]:
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj).__name__
        counts[kind] += 1
        if isinstance(obj, CoroutineType):
            counts[f"  coroutine in {_module_of(obj.cr_code.co_filename)}"] += 1
        if DETAIL:
            what = _detail(obj)
            if what:
                counts[f"# {kind}: {what}"] += 1
    return counts


#: Set (by ``--detail``) in the wrapped server's environment: name what each object is.
DETAIL_ENV = "BENCH_CENSUS_DETAIL"
DETAIL = bool(os.environ.get(DETAIL_ENV))


def _detail(obj: object) -> str:
    """Which code an object belongs to, for the kinds a chat in flight holds most of:
    coroutines and generators by function, bound methods by function (a ``with`` block in
    progress holds its ``__exit__`` as one), closure cells by what they hold."""
    if isinstance(obj, CoroutineType):
        return f"{obj.cr_code.co_qualname} ({_module_of(obj.cr_code.co_filename)})"
    if isinstance(obj, GeneratorType):
        return f"{obj.gi_code.co_qualname} ({_module_of(obj.gi_code.co_filename)})"
    if isinstance(obj, MethodType):
        return str(getattr(obj.__func__, "__qualname__", "?"))
    if isinstance(obj, CellType):
        try:
            return f"holding a {type(obj.cell_contents).__name__}"
        except ValueError:
            return "empty"
    return ""


def _module_of(filename: str) -> str:
    for marker in ("site-packages/", f"{procs.ROOT}/", "/lib/python3."):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return filename.split("/")[0] if "/" in filename else filename


def wrapped_serve(argv: list[str]) -> int:
    """The server process: ``neuro-san <argv>``; SIGUSR1 writes a census to the next file."""
    out = Path(os.environ[CENSUS_ENV])
    taken = [0]

    def take(_signum: int, _frame: FrameType | None) -> None:
        taken[0] += 1
        path = out / f"census-{taken[0]}.json"
        partial = path.with_suffix(".part")
        partial.write_text(json.dumps(_census()))
        partial.rename(path)  # whole or absent: the orchestrator polls for it

    signal.signal(signal.SIGUSR1, take)
    from neuro_san.cli.main import main

    return int(main(argv) or 0)


def _take(pid: int, path: Path) -> Counter[str]:
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server wrote no census to {path}")
        time.sleep(0.05)
    return Counter(json.loads(path.read_text()))


def report(idle: Counter[str], busy: Counter[str], chats: int, top: int) -> str:
    growth = {kind: (busy[kind] - idle.get(kind, 0)) / chats for kind in busy}
    kinds = [k for k in growth if not k.startswith((" ", "#"))]
    total = sum(growth[k] for k in kinds)
    lines = [f"{chats} chats in flight; {total:,.1f} tracked objects per chat "
             f"(idle: {sum(v for k, v in idle.items() if not k.startswith((' ', '#'))):,})", ""]
    for kind in sorted(kinds, key=lambda k: -growth[k])[:top]:
        lines.append(f"  {growth[kind]:8.2f}  {kind}")
        lines += [f"  {growth[k]:8.2f}    {k.split(': ', 1)[1]}" for k in sorted(growth, key=lambda k: -growth[k])
                  if k.startswith(f"# {kind}: ") and growth[k] >= 0.5]
        if kind == "coroutine":
            lines += [f"  {growth[k]:8.2f}    {k.strip()}" for k in sorted(growth, key=lambda k: -growth[k])
                      if k.startswith("  coroutine in ") and growth[k] > 0]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=8000.0)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--detail", action="store_true",
                        help="also name the code each coroutine, generator, bound method and cell belongs to")
    parser.add_argument("--wrap", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.wrap is not None:
        return wrapped_serve(args.wrap)
    out = Path(tempfile.mkdtemp(prefix="bench-census-"))
    fake, fake_port = procs.start_fake(args.latency_ms, True)
    wrapper = [sys.executable, "-m", "bench.census", "--wrap"]
    env = {CENSUS_ENV: str(out), **({DETAIL_ENV: "1"} if args.detail else {})}
    server = procs.start_server(fake_port, True, env, launcher=wrapper)
    try:
        spec = {**closed_spec("http", server.http_base, "echo", 1, 0, Settings(), True),
                "mode": "burst", "count": args.chats, "warmup": 1}
        load = procs.Proc.start([sys.executable, "-m", "bench.load", json.dumps(spec)], stdin=True)
        try:
            load.wait_for("READY", 120 + args.latency_ms / 1000)
            idle = _take(server.proc.pid, out / "census-1.json")
            load.send_line()
            # The burst's chats are all waiting on the LLM well before it answers.
            time.sleep(min(args.latency_ms / 2000, 3 + args.chats / 500))
            busy = _take(server.proc.pid, out / "census-2.json")
            load.wait_for("RESULT ", 600 + args.latency_ms / 1000)
        finally:
            load.stop()
    finally:
        server.proc.stop()
        fake.stop()
    print(report(idle, busy, args.chats, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
