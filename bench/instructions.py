"""Instructions per call of the server, REST beside a front-end: ``python -m bench.instructions``.

CPU time per call on this shared 2-core machine moves by ±15–30 % from run to run, more
than most changes to one front-end. The instructions the server's process executes in
user space (valgrind's callgrind, ``Ir``) move by under 0.5 %. They leave out the kernel's
share (socket writes), so they do not replace S10's CPU figures: they say whether a change
made the Python path shorter.

The server runs under ``valgrind --tool=callgrind --instr-atstart=no`` (uninstrumented
until the load starts, so start-up takes seconds, not minutes) from ``--root`` (default:
this checkout; another commit's tree, e.g. from ``git archive``, measures that commit), the
fake LLM as S10 runs it. Each round runs ``--calls`` REST chats, then as many calls of each
``--transport`` (2 clients, echo), counters zeroed after each load's warm-up and dumped at
its end (``callgrind_control``). Needs valgrind.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import procs
from bench.frontends import WORDS
from bench.run import Settings, closed_spec

ROOT = Path(__file__).resolve().parents[1]
#: ``--transport http+tokens``: REST with ``stream_tokens`` (AG-UI's baseline, as in S10);
#: ``+maximal``: with the MAXIMAL filter.
_VARIANTS: dict[str, dict[str, bool]] = {"": {}, "tokens": {"stream_tokens": True}, "maximal": {"maximal": True}}


def _control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, check=False)


def _instructions(dump: str) -> int:
    for line in Path(dump).read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError(f"no totals in {dump}")


def _phase(server: procs.Proc, base: str, transport: str, calls: int, out_dir: Path) -> float:
    """Instructions per call of ``calls`` calls over ``transport``."""
    kind, _, variant = transport.partition("+")
    spec = {**closed_spec(kind, base, "echo", 2, 600, Settings(), True), "count": calls, "warmup": 3,
            **_VARIANTS[variant]}
    load = procs.Proc.start([sys.executable, "-m", "bench.load", json.dumps(spec)], stdin=True)
    try:
        load.wait_for("READY", 600)
        _control(server.pid, "-z")
        load.send_line()
        result = json.loads(load.wait_for("RESULT ", 900)[len("RESULT "):])
        before = set(glob.glob(f"{out_dir}/cg.out.*"))
        _control(server.pid, "-d")
        deadline = time.monotonic() + 30
        while not (new := set(glob.glob(f"{out_dir}/cg.out.*")) - before) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        load.stop()
    if result["failed"] or not new:
        raise RuntimeError(f"{transport}: {result['failed']} calls failed, {len(new)} dumps")
    time.sleep(0.5)  # let callgrind finish writing the dump
    return _instructions(max(new, key=os.path.getmtime)) / result["completed"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree whose server is measured")
    parser.add_argument("--transport", action="append", default=None,
                        help="front-end load(s) (default: mcp); http+tokens: REST with stream_tokens, "
                             "<load>+maximal: with the MAXIMAL filter")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=150)
    args = parser.parse_args(argv)
    transports = ["http", *(args.transport or ["mcp"])]
    out_dir = Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
    fake, fake_port = procs.start_fake(0.0, True, "--stream-words", str(WORDS), "--stream-pace-ms", "0")
    root = args.root.resolve()
    env = {"AGENT_LLM_OVERRIDE": procs.llm_override(fake_port), "AGENT_SERVICE_LOG_LEVEL": "INFO",
           "PYTHONPATH": str(root)}
    # From the root's directory: ``-m`` puts it first on sys.path, ahead of this checkout.
    command = (f"cd {root} && exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file={out_dir}/cg.out "
               f"{sys.executable} -m neuro_san.cli.main serve --host 127.0.0.1 --port 0 --http-port 0")
    server = procs.Proc.start(["sh", "-c", command], env, log_path=out_dir / "server.log")
    try:
        base = f"http://127.0.0.1:{procs.port_of(server.wait_for('READY', 600), 'http')}"
        _control(server.pid, "-i", "on")
        for transport in transports:  # warm: imports, the first listing, caches
            _phase(server, base, transport, 20, out_dir)
        for round_number in range(args.rounds):
            figures = {transport: _phase(server, base, transport, args.calls, out_dir) for transport in transports}
            shown = ", ".join(f"{name} {value / 1e6:.3f} M" for name, value in figures.items())
            ratios = ", ".join(f"{name} {figures[name] / figures['http']:.3f}× REST" for name in transports[1:])
            print(f"round {round_number}: {shown} instructions per call; {ratios}", flush=True)
    finally:
        server.stop()
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
