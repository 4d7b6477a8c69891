"""Profile the server under a scenario's load with py-spy: ``python -m bench.profile``.

Starts the fake LLM and ``neuro-san serve`` like ``bench.run``, drives one scenario's load
(``--scenario S2``: echo over HTTP; ``S3``: math_guy over HTTP; ``S4``: echo over gRPC;
``S9``/``S9-http``: echo with ``stream_tokens`` over gRPC/HTTP, the fake streaming S9's answer;
``S10-mcp``, ``S10-a2a`` (JSON-RPC; ``S10-a2a-grpc``, ``S10-a2a-rest``: the other
bindings), ``S10-openai``, ``S10-agui``: S10's front-end calls on echo;
``S5``: S5's burst, 2,000 HTTP chats at once against a fake taking 1 s, sampled from the
burst's start for ``--seconds``) and samples the server with ``py-spy record`` (``pip install py-spy``; it needs ptrace
rights). Prints the functions with the most samples, by own time and by inclusive time
(``file:function``), and keeps the raw collapsed stacks (``--raw``, for flame graphs).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench import procs
from bench.frontends import WORDS as S10_WORDS
from bench.run import Settings, closed_spec, uvloop_installed

LOADS = {
    "S2": ("http", "echo"), "S3": ("http", "math_guy"), "S4": ("grpc", "echo"),
    "S9": ("grpc", "echo"), "S9-http": ("http", "echo"), "S5": ("http", "echo"),
    "S10-mcp": ("mcp", "echo"), "S10-a2a": ("a2a", "echo"), "S10-openai": ("openai", "echo"),
    "S10-agui": ("agui", "echo"), "S10-a2a-grpc": ("a2a_grpc", "echo"), "S10-a2a-rest": ("a2a_rest", "echo"),
}  # fmt: skip


def summarize(collapsed: Path, top: int) -> str:
    """Own and inclusive sample shares per ``file:function`` from py-spy's raw output."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for stack, count in _stacks(collapsed):
        total += count
        frames = [_short(frame) for frame in stack]
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [f"{total} samples", "", "own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines += ["", "inclusive time:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(lines)


REPO_ROOT = str(Path(__file__).resolve().parents[1])

#: (area, substrings of a frame's path or name), most specific first: each sample goes to
#: the area of its innermost frame that matches one (the table in docs/performance.md).
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("logging", ("logging/", "neuro_san/service/logs.py")),
    ("prometheus_client", ("prometheus_client/",)),
    ("protobuf json_format", ("json_format",)),
    ("grpc client calls (gateway -> server)", ("grpc/aio/_call.py", "grpc/aio/_channel.py", "grpc/aio/_interceptor")),
    ("grpc (server side, Cython)", ("grpc/", "_cython")),
    ("gateway/local_call.py + inprocess.py", ("gateway/local_call.py", "gateway/inprocess.py")),
    ("gateway/ (rest)", ("gateway/",)),
    ("neuro_san/service", ("neuro_san/service/",)),
    ("neuro_san/runtime", ("neuro_san/runtime/",)),
    ("neuro_san/llm", ("neuro_san/llm/",)),
    ("neuro_san/core + network", ("neuro_san/core/", "neuro_san/network/")),
    ("aiohttp socket writes (http_writer, transport.write)", ("http_writer.py", "Transport.write", "transport.write")),
    ("aiohttp client (LLM calls)", ("aiohttp/client", "aiohttp/connector", "aiohappyeyeballs")),
    ("aiohttp server (gateway)", ("aiohttp/",)),
    ("json (stdlib)", ("json/",)),
    ("event loop (asyncio / uvloop)", ("asyncio/", "uvloop", "selectors.py", "contextvars")),
    ("contextlib", ("contextlib.py",)),
)


def _stacks(collapsed: Path) -> Iterator[tuple[list[str], int]]:
    """(frames outermost first, samples) per line of py-spy's raw (collapsed) output."""
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if stack:
            yield stack.split(";"), int(count_text)


def group_by_area(collapsed: Path) -> str:
    """Sample shares by area (:data:`AREAS`) of the innermost frame that names one."""
    areas: Counter[str] = Counter()
    total = 0
    for stack, count in _stacks(collapsed):
        total += count
        areas[_area(stack)] += count
    return "\n".join(f"  {100 * n / total:5.1f}%  {name}" for name, n in areas.most_common())


def _area(frames: list[str]) -> str:
    for frame in reversed(frames):
        for area, needles in AREAS:
            if any(needle in frame for needle in needles):
                return area
    return "other (threads, native)"


def _short(frame: str) -> str:
    # py-spy frames look like "function (path/to/file.py:123)".
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", f"{REPO_ROOT}/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{name}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scenario", choices=sorted(LOADS), default="S2")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--no-uvloop", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--raw", type=Path, default=Path("/tmp/bench-profile.txt"))
    parser.add_argument(
        "--native", action="store_true",
        help="sample C frames too (grpc's Cython and C core, uvloop): what 'Runner.run' own time hides",
    )  # fmt: skip
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    fast = uvloop_installed() and not args.no_uvloop
    transport, agent = LOADS[args.scenario]
    streamed = args.scenario.startswith("S9")
    defaults = Settings()
    stream_args = ("--stream-words", str(defaults.s9_words), "--stream-pace-ms", str(defaults.s9_pace_ms))
    if args.scenario.startswith("S10"):  # the fake as S10 runs it: a short answer, unpaced
        streamed, stream_args = True, ("--stream-words", str(S10_WORDS), "--stream-pace-ms", "0")
    burst = args.scenario == "S5"
    latency_ms = defaults.s5_latency_ms if burst else 0.0
    fake, fake_port = procs.start_fake(latency_ms, fast, *(stream_args if streamed else ()))
    server = procs.start_server(fake_port, fast)
    try:
        target = server.grpc_target if transport in ("grpc", "a2a_grpc") else server.http_base
        spec = closed_spec(transport, target, agent, 16, args.seconds + 3, defaults, fast)
        spec["stream_tokens"] = args.scenario.startswith("S9")
        if burst:  # as bench.run's S5: one warm-up chat, then every chat at once
            spec.update(mode="burst", count=defaults.s5_chats, warmup=1)
        load = threading.Thread(target=procs.run_load, args=(spec, server.proc.pid))
        load.start()
        subprocess.run(
            [py_spy, "record", "-p", str(server.proc.pid), "-d", str(int(args.seconds)), "-r", "250",
             "-f", "raw", "-o", str(args.raw), *(["--native"] if args.native else ["--nonblocking"])],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        load.join()
    finally:
        server.proc.stop()
        fake.stop()
    print(summarize(args.raw, args.top))
    print("\nby area (innermost frame):")
    print(group_by_area(args.raw))
    return 0


if __name__ == "__main__":
    sys.exit(main())
