"""``neuro-san serve --workers N``: N server processes on the same ports, one parent.

One Python process runs on one core. With ``--workers N`` (or ``AGENT_WORKERS``; ``auto``
= one per core this process may use) the parent starts N ``neuro-san serve`` processes
that each bind the gRPC and HTTP ports with SO_REUSEPORT, so the kernel spreads new
connections over them. The workers share nothing of their own: a conversation's state
travels in its chat_context, so any worker continues any conversation. What the front-ends
keep between requests (A2A's tasks) and per-caller limits are shared as between replicas,
through Redis; without it the parent refuses to start several workers with A2A on or
limits set (:func:`_per_worker_state`), since each worker would hold its own.

The parent serves nothing itself. It:

- picks the ports once (a port of 0 becomes one free port, held by a bound, never
  listening SO_REUSEPORT socket so no other program takes it while workers restart);
- waits until every worker is ready, then prints the one ``READY grpc=… http=…`` line
  (workers report readiness on a private pipe, not on stdout);
- restarts a worker that dies (a kill -9 loses only that worker's calls in flight);
- on SIGTERM / SIGINT sends SIGTERM to every worker, which drains as a single server
  does (health NOT_SERVING, calls in flight finish within ``--grace``), and exits 0 when
  all have exited cleanly.

Each worker's ``/healthz``, ``/readyz`` and gRPC health answer for that worker, so a
probe sees NOT_SERVING as soon as the worker it reaches drains. Log lines carry the
worker's pid (``worker``) when there are several.

A worker whose parent is gone (killed with SIGKILL, crashed: it could not send SIGTERM)
drains and exits as on SIGTERM (:func:`stop_when_orphaned`), rather than serving the
ports on, unsupervised, beside whatever is started on them next.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuro_san.cli.serve_settings import a2a_served, config_from_args, openai_served
from neuro_san.settings import current, process_env

if TYPE_CHECKING:
    from neuro_san.service.server import ServerConfig

log = logging.getLogger("neuro_san.serve")

READY_FD_ENV = "AGENT_WORKER_READY_FD"
#: The parent's pid, passed by the parent: had it died before the worker first looked,
#: the worker's own ``os.getppid()`` would already name another process (init).
PARENT_PID_ENV = "AGENT_WORKER_PARENT_PID"
#: How often a worker looks whether its parent is still there.
PARENT_CHECK_SECONDS = 0.5
INVOKER_ENV = "AGENT_GATEWAY_INVOKER"
INVOKERS = ("inprocess", "grpc")
#: A worker that dies sooner than this after starting is restarted after a pause, so a
#: worker that cannot start (bad port, bad file) does not spin the CPU.
_CRASH_LOOP_SECONDS = 5.0


def add_workers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers", default=None, metavar="N",
        help="server processes sharing the ports (SO_REUSEPORT); 'auto': one per core "
        "(AGENT_WORKERS, default 1)",
    )  # fmt: skip


def parse_workers(text: str) -> int:
    """``"auto"`` → the cores this process may run on; else a whole number ≥ 1."""
    text = text.strip().lower()
    if text == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    count = int(text)
    if count < 1:
        raise ValueError("must be at least 1")
    return count


def worker_count(args: argparse.Namespace) -> int | None:
    """How many workers to run; None (after logging why) when the settings are unusable."""
    text = args.workers if args.workers is not None else current().value("AGENT_WORKERS")
    try:
        count = parse_workers(str(text))
    except ValueError:
        log.error("--workers / AGENT_WORKERS must be a whole number >= 1 or 'auto', not %r", text)
        return None
    if gateway_invoker_setting() not in INVOKERS:
        log.error("%s must be one of %s, not %r", INVOKER_ENV, ", ".join(INVOKERS), gateway_invoker_setting())
        return None
    if count > 1 and args.metrics_port:
        log.error("--metrics-port cannot be shared by several workers: scrape the gateway's /metrics instead")
        return None
    return count


def gateway_invoker_setting() -> str:
    return str(process_env().get(INVOKER_ENV, "").strip().lower() or "inprocess")


def gateway_in_process() -> bool:
    """True unless ``AGENT_GATEWAY_INVOKER=grpc`` asks for the gateway's gRPC hop."""
    return gateway_invoker_setting() != "grpc"


def is_worker() -> bool:
    return bool(process_env().get(READY_FD_ENV))


def announce_ready(line: str) -> None:
    """A worker tells its parent on the private pipe; a lone server prints the line."""
    fd = process_env().get(READY_FD_ENV, "")
    if not fd:
        print(line, flush=True)
        return
    try:
        os.write(int(fd), (line + "\n").encode())
        os.close(int(fd))
    except OSError as error:  # the parent is gone: nothing to tell
        log.warning("cannot report readiness to the parent: %s", error)


async def stop_when_orphaned(stop: asyncio.Event) -> None:
    """In a worker: set ``stop`` (drain and exit, as on SIGTERM) once the parent that
    started it is gone; a lone server returns at once. Polls ``getppid`` (a re-parented
    worker sees another pid): portable, and one cheap syscall every half second."""
    parent = int(process_env().get(PARENT_PID_ENV, "0") or 0)
    if not is_worker() or parent <= 0:
        return
    while not stop.is_set():
        if os.getppid() != parent:
            log.warning("the parent process (pid %d) is gone: draining and exiting", parent)
            stop.set()
            return
        await asyncio.sleep(PARENT_CHECK_SECONDS)


class _WorkerTag(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = os.getpid()
        return True


def tag_worker_logs() -> None:
    """In a worker, every log line names the worker's pid."""
    if is_worker():
        for handler in logging.getLogger().handlers:
            handler.addFilter(_WorkerTag())


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    started: float
    ready: threading.Event = field(default_factory=threading.Event)
    ready_line: list[str] = field(default_factory=list)


def _reserve(host: str, port: int) -> tuple[int, socket.socket | None]:
    """A concrete port for ``port`` (0: a free one, held by a non-listening socket)."""
    if port:
        return port, None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind((host, 0))
    return int(holder.getsockname()[1]), holder


def _worker_command(args: argparse.Namespace, grpc_port: int, http_port: int) -> list[str]:
    """This same command line, pinned to the chosen ports and to one worker each."""
    command = [sys.executable, "-m", "neuro_san.cli.main", *sys.argv[1:]]
    command += ["--port", str(grpc_port), "--workers", "1"]
    if not args.no_http:
        command += ["--http-port", str(http_port)]
    return command


def _spawn(index: int, command: list[str]) -> _Worker:
    read_end, write_end = os.pipe()
    # A worker gets the parent's environment as read at start, with its pipe and parent.
    env = {**process_env(), READY_FD_ENV: str(write_end), PARENT_PID_ENV: str(os.getpid()), "AGENT_WORKERS": "1"}
    process = subprocess.Popen(command, env=env, pass_fds=(write_end,))
    os.close(write_end)
    worker = _Worker(index, process, time.monotonic())
    threading.Thread(target=_await_ready, args=(worker, read_end), daemon=True).start()
    return worker


def _await_ready(worker: _Worker, read_end: int) -> None:
    with os.fdopen(read_end, "rb") as pipe:
        line = pipe.readline().decode(errors="replace").strip()
    if line.startswith("READY"):
        worker.ready_line.append(line)
        log.info("worker %d (pid %d) ready", worker.index, worker.process.pid)
    worker.ready.set()


def _ports(args: argparse.Namespace, config: ServerConfig) -> tuple[str, int, int]:
    http_port = args.http_port
    if http_port is None:
        http_port = current().value("AGENT_HTTP_PORT")
    return config.host, config.port, http_port


def _check_settings(args: argparse.Namespace, config: ServerConfig, count: int) -> None:
    """Settings every worker would refuse, refused once here before any is started: the
    server's own (``config``, read by the caller), the HTTP gateway's connection limits and Host
    allowlist, and state
    the workers would each keep alone (:func:`_per_worker_state`)."""
    if not args.no_http:
        # Lazy: the HTTP side only when HTTP is served.
        from gateway.host.allowed_hosts import AllowedHosts
        from gateway.host.connection_guard import ConnectionLimits

        ConnectionLimits.from_env(process_env())
        AllowedHosts.from_env(process_env())
    alone = _per_worker_state(args, config)
    if alone:
        raise ValueError(f"--workers {count}: " + "; ".join(alone))


def _per_worker_state(args: argparse.Namespace, config: ServerConfig) -> list[str]:
    """What would be each worker's own without Redis, said with how to share it or turn it
    off. The kernel hands each new connection to any worker, so state one worker keeps is
    missing on the others: a client would see it come and go (an A2A GetTask finding its task
    on one connection and not on the next, an OpenAI ``previous_response_id`` not found), and
    a per-caller limit would count per worker, several times what it says. MCP is not here:
    all it keeps is calls in flight, and a cancellation that reaches another worker doing
    nothing is what its spec allows."""
    from gateway.state.interface import REDIS_URL_ENV  # names only: imports no Redis client

    env = process_env()
    alone = []
    if a2a_served(args) and not env.get(REDIS_URL_ENV, "").strip():
        alone.append(f"A2A's tasks, contextIds and push configurations would be each worker's own, and a "
                     f"client's next request may reach another worker (a GetTask would miss its task): set "
                     f"{REDIS_URL_ENV} to a Redis the workers share, or turn A2A off (AGENT_A2A_ENABLE=false)")
    if openai_served(args) and not env.get(REDIS_URL_ENV, "").strip():
        alone.append(f"the OpenAI API's stored responses would be each worker's own, and a previous_response_id "
                     f"may reach another worker (404): set {REDIS_URL_ENV} to a Redis the workers share, or turn "
                     f"the OpenAI API off (AGENT_OPENAI_ENABLE=false)")
    if (config.rate_limits.limits_anything or config.access.keys_have_limits) and not config.limits_redis_url:
        alone.append("the per-caller limits (AGENT_RATE_LIMIT_*, AGENT_TOKEN_BUDGET_*, the keys file's limits) "
                     "would count per worker, so a caller could use several times what they say: set "
                     f"AGENT_LIMITS_REDIS_URL (or {REDIS_URL_ENV}) to a Redis the workers share")
    return alone


def supervise(args: argparse.Namespace, count: int) -> int:
    """Run ``count`` workers until SIGTERM / SIGINT; 0 when all drained cleanly."""
    from neuro_san.core.errors import ConfigurationError

    try:
        config = config_from_args(args)
        host, grpc_wanted, http_wanted = _ports(args, config)
        _check_settings(args, config, count)
    except (ValueError, ConfigurationError) as bad:  # one line and exit 2, as a single server
        log.error("not starting: %s", bad)
        return 2
    grpc_port, grpc_holder = _reserve(host, grpc_wanted)
    http_port, http_holder = (0, None) if args.no_http else _reserve(host, http_wanted)
    command = _worker_command(args, grpc_port, http_port)
    stopping = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stopping.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    workers = [_spawn(index, command) for index in range(count)]
    try:
        if not _all_ready(workers, stopping, timeout=120.0):
            log.error("not every worker started; stopping")
            _stop_all(workers, args.grace)
            return 2
        print(f"READY grpc={grpc_port} http={http_port} metrics=0 workers={count}", flush=True)
        log.info("%d workers serving: pids %s", count, " ".join(str(w.process.pid) for w in workers))
        while not stopping.wait(0.1):
            for position, worker in enumerate(workers):
                code = worker.process.poll()
                if code is None:
                    continue
                log.warning("worker %d (pid %d) exited with %s; starting another",
                            worker.index, worker.process.pid, code)  # fmt: skip
                if time.monotonic() - worker.started < _CRASH_LOOP_SECONDS and stopping.wait(1.0):
                    break
                workers[position] = _spawn(worker.index, command)
        log.info("stopping %d workers: draining for up to %.0f s", len(workers), args.grace)
        return _stop_all(workers, args.grace)
    finally:
        for holder in (grpc_holder, http_holder):
            if holder is not None:
                holder.close()


def _all_ready(workers: list[_Worker], stopping: threading.Event, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    for worker in workers:
        while not worker.ready.wait(0.05):
            if stopping.is_set() or time.monotonic() > deadline or worker.process.poll() is not None:
                return False
        if not worker.ready_line:
            return False
    return True


def _stop_all(workers: list[_Worker], grace: float) -> int:
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace + 15.0
    status = 0
    for worker in workers:
        try:
            code = worker.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.error("worker %d (pid %d) did not stop; killing it", worker.index, worker.process.pid)
            worker.process.kill()
            code = worker.process.wait()
        if code != 0:
            status = 1
    return status
