"""Processes of a benchmark run (server, fake LLM, floors, load generators) and what
/proc says about them (CPU seconds, resident memory). No psutil: /proc is enough."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# Runs ``neuro-san serve`` with uvloop hidden, so serve.py falls back to asyncio.run.
_WITHOUT_UVLOOP = "import sys; sys.modules['uvloop'] = None; from neuro_san.cli.main import main; sys.exit(main())"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (all its threads), plus those of its
    live child processes (the workers of ``serve --workers N``)."""
    return _own_cpu_seconds(pid) + sum(_own_cpu_seconds(child) for child in children(pid))


def _own_cpu_seconds(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # a child that just exited
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    # After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS (now) and VmHWM (peak) of ``pid`` in MiB."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return {"rss_mib": found.get("VmRSS", 0.0), "peak_rss_mib": found.get("VmHWM", 0.0)}


@dataclass
class Proc:
    """A child process whose output lines are collected by a thread."""

    popen: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _new_line: threading.Condition = field(default_factory=threading.Condition)

    log_path: Path | None = None

    @classmethod
    def start(
        cls, args: list[str], env: dict[str, str] | None = None, stdin: bool = False, log_path: Path | None = None
    ) -> Proc:
        """Start ``args``. With ``log_path``, output goes to that file rather than a pipe,
        so a chatty server (one INFO line per call) never waits on our reading it."""
        log_file = log_path.open("w") if log_path else None
        popen = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=log_file or subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        if log_file:
            log_file.close()  # the child has its own descriptor
        proc = cls(popen, log_path=log_path)
        threading.Thread(target=proc._tail if log_path else proc._pump, daemon=True).start()
        return proc

    def _tail(self) -> None:
        """Follow the log file until the first READY line (all that is waited for)."""
        assert self.log_path is not None
        with self.log_path.open() as log:
            partial = ""
            while True:
                chunk = log.readline()
                if not chunk:
                    if self.popen.poll() is not None:
                        break
                    time.sleep(0.005)
                    continue
                partial += chunk
                if not partial.endswith("\n"):
                    continue
                with self._new_line:
                    self.lines.append(partial)
                    self._new_line.notify_all()
                if partial.startswith("READY"):
                    break
                partial = ""
        with self._new_line:
            self._new_line.notify_all()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _pump(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            with self._new_line:
                self.lines.append(line)
                self._new_line.notify_all()
        with self._new_line:
            self._new_line.notify_all()

    def wait_for(self, prefix: str, timeout: float) -> str:
        """The first output line starting with ``prefix``; raises when the process exits
        or ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        with self._new_line:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line.strip()
                if self.popen.poll() is not None and not self._pump_alive():
                    raise RuntimeError(f"{self.popen.args!r} exited {self.popen.returncode}:\n{self.output()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {prefix!r} from {self.popen.args!r} in {timeout} s:\n{self.output()}")
                self._new_line.wait(min(left, 0.05))

    def _pump_alive(self) -> bool:
        return self.popen.stdout is not None and not self.popen.stdout.closed

    def send_line(self, text: str = "go") -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(text + "\n")
        self.popen.stdin.flush()

    def output(self) -> str:
        if self.log_path is not None and self.log_path.exists():
            return "".join(self.log_path.read_text(errors="replace").splitlines(keepends=True)[-40:])
        return "".join(self.lines[-40:])

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)


def port_of(ready_line: str, key: str = "port") -> int:
    """``READY port=123`` or ``READY grpc=1 http=2`` → the value of ``key``."""
    for token in ready_line.split()[1:]:
        name, _, value = token.partition("=")
        if name == key:
            return int(value)
    raise ValueError(f"no {key} in {ready_line!r}")


def start_fake(latency_ms: float, use_uvloop: bool, *stream_args: str) -> tuple[Proc, int]:
    """``stream_args``: ``--stream-words N --stream-pace-ms P`` for S9."""
    args = [sys.executable, "-m", "bench.fake", "--latency-ms", str(latency_ms), *stream_args]
    proc = Proc.start(args + (["--uvloop"] if use_uvloop else []))
    return proc, port_of(proc.wait_for("READY", 30))


def start_floor(
    kind: str, use_uvloop: bool, sleep_ms: float = 0.0, llm_url: str = "", port: int = 0
) -> tuple[Proc, int]:
    """A bare floor server; ``port``: join the HTTP floor processes already on it."""
    args = [sys.executable, "-m", "bench.floor", kind, "--sleep-ms", str(sleep_ms), "--llm-url", llm_url,
            "--port", str(port)]
    proc = Proc.start(args + (["--uvloop"] if use_uvloop else []))
    return proc, port_of(proc.wait_for("READY", 30))


def start_a2a_floor(use_uvloop: bool, stream_words: int) -> tuple[Proc, int, int, str]:
    """The a2a-sdk's own server (bench/a2a_floor.py): the process, its HTTP and gRPC ports,
    and the HTTP parser uvicorn runs with."""
    args = [sys.executable, "-m", "bench.a2a_floor", "--stream-words", str(stream_words)]
    proc = Proc.start(args + (["--uvloop"] if use_uvloop else []))
    line = proc.wait_for("READY", 60)
    parser = line.rpartition("parser=")[2] if "parser=" in line else ""
    return proc, port_of(line, "http"), port_of(line, "grpc"), parser


def start_floors(processes: int, use_uvloop: bool, sleep_ms: float) -> tuple[list[Proc], int]:
    """The bare HTTP floor on ``processes`` processes sharing one port (as ``serve --workers``)."""
    first, port = start_floor("http", use_uvloop, sleep_ms)
    others = [start_floor("http", use_uvloop, sleep_ms, port=port)[0] for _ in range(processes - 1)]
    return [first, *others], port


def llm_override(fake_port: int) -> str:
    return json.dumps(
        {
            "class": "openai",
            "model_name": "fake-model",
            "openai_api_base": f"http://127.0.0.1:{fake_port}/v1",
            "openai_api_key": "bench-key",
        }
    )


@dataclass
class Server:
    proc: Proc
    grpc_port: int
    http_port: int
    ready_s: float
    healthy_s: float

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


#: Open HTTP connections a bench server accepts, overall and from one address.
BURST_CONNECTION_CAP = 30_000


def start_server(
    fake_port: int,
    use_uvloop: bool,
    extra_env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
    launcher: list[str] | None = None,
) -> Server:
    """``neuro-san serve`` (gRPC + gateway) on free ports, the bundled networks pointed at
    the fake by AGENT_LLM_OVERRIDE. Times are from just before the process is spawned.
    ``launcher``: what runs ``serve …`` instead of ``python -m neuro_san.cli.main`` (a
    wrapper that behaves the same, e.g. ``bench.calls``'s profiling one)."""
    serve = ["serve", "--host", "127.0.0.1", "--port", "0", "--http-port", "0", *(extra_args or [])]
    if launcher:
        args = [*launcher, *serve]
    elif use_uvloop:
        args = [sys.executable, "-m", "neuro_san.cli.main", *serve]
    else:
        args = [sys.executable, "-c", _WITHOUT_UVLOOP, *serve]
    env = {
        "AGENT_LLM_OVERRIDE": llm_override(fake_port),
        "AGENT_SERVICE_LOG_LEVEL": "INFO",
        # Every bench client is 127.0.0.1: S5's 2,000 and S7's 10,000 connections at once are
        # one address, which the default per-address cap (1,000) is there to refuse.
        "AGENT_HTTP_MAX_CONNECTIONS": str(BURST_CONNECTION_CAP),
        "AGENT_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(BURST_CONNECTION_CAP),
        **(extra_env or {}),
    }
    log_path = Path(tempfile.mkstemp(prefix="bench-server-", suffix=".log")[1])
    started = time.monotonic()
    proc = Proc.start(args, env, log_path=log_path)
    line = proc.wait_for("READY", 60)
    ready = time.monotonic() - started
    grpc_port, http_port = port_of(line, "grpc"), port_of(line, "http")
    deadline = started + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/healthz", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.stop()
            raise TimeoutError(f"server never healthy:\n{proc.output()}")
        time.sleep(0.005)
    return Server(proc, grpc_port, http_port, ready, time.monotonic() - started)


def run_load(
    spec: dict[str, Any], measured_pid: int | None = None, timeout: float = 300, fake_pid: int | None = None
) -> dict[str, Any]:
    """One load-generator run; adds the measured process's CPU over the run window (and
    the fake LLM's, to show who had the machine's cores)."""
    proc = Proc.start([sys.executable, "-m", "bench.load", json.dumps(spec)], stdin=True)
    try:
        proc.wait_for("READY", 120)
        cpu_before = cpu_seconds(measured_pid) if measured_pid else 0.0
        fake_before = cpu_seconds(fake_pid) if fake_pid else 0.0
        proc.send_line()
        line = proc.wait_for("RESULT ", timeout)
        cpu_after = cpu_seconds(measured_pid) if measured_pid else 0.0
        fake_after = cpu_seconds(fake_pid) if fake_pid else 0.0
    finally:
        proc.stop()
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    if measured_pid:
        used = cpu_after - cpu_before
        result["server_cpu_s"] = used
        result["cpu_ms_per_chat"] = used * 1000 / result["completed"] if result["completed"] else 0.0
    if fake_pid:
        result["fake_llm_cpu_s"] = fake_after - fake_before
    if result["completed"]:
        # The generator shares the cores: a rate can be capped by its cost, not the server's.
        result["loadgen_cpu_ms_per_chat"] = result["loadgen_cpu_s"] * 1000 / result["completed"]
    return result
