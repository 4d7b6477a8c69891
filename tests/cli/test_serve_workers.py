"""``neuro-san serve --workers 2``: two processes on the same ports under one parent."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest

from neuro_san.cli.workers import parse_workers
from tests.gateway_http_support import Reply, call, chat, wait_for
from tests.support import grpc_calls as calls
from tests.support.cluster import RedisProcess
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import ServerProcess, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

WORKERS = ["--workers", "2"]
#: JSON logs name the worker of each line. A2A is off: these tests are about the processes,
#: and A2A on several workers needs a Redis they share (refused otherwise; tested below).
WORKERS_ENV = {"AGENT_SERVICE_LOG_JSON": "1", "AGENT_A2A_ENABLE": "false"}


def _children(pid: int) -> set[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(child) for child in text.split()}


def _worker_of(server: ServerProcess, request_id: str) -> int | None:
    """The pid of the worker whose log line ended the call ``request_id``."""
    for line in server.log().splitlines():
        if f'"{request_id}"' in line and '"status"' in line:
            entry = json.loads(line)
            if entry.get("request_id") == request_id:
                return int(entry["worker"])
    return None


def _chats_in_threads(port: int, count: int, prefix: str) -> tuple[list[threading.Thread], dict[str, Reply | str]]:
    results: dict[str, Reply | str] = {}

    def run(request_id: str) -> None:
        try:
            results[request_id] = chat(port, "echo", request_id, request_id=request_id)
        except OSError as error:  # the worker holding it was killed
            results[request_id] = f"{type(error).__name__}"

    threads = [threading.Thread(target=run, args=(f"{prefix}{index}",)) for index in range(count)]
    for thread in threads:
        thread.start()
    return threads, results


def _finished(reply: Reply | str, text: str) -> bool:
    return isinstance(reply, Reply) and reply.status == 200 and reply.lines()[-1]["response"]["text"] == text


def test_parse_workers() -> None:
    assert parse_workers("3") == 3
    assert parse_workers("auto") >= 1
    for bad in ("0", "-1", "many"):
        with pytest.raises(ValueError):
            parse_workers(bad)


def test_both_ports_answer_from_different_workers() -> None:
    with start_server(http=True, env=WORKERS_ENV, extra_args=WORKERS) as server:
        assert server.log().count("READY ") == 1, "one READY line, from the parent"
        workers = _children(server.process.pid)
        assert len(workers) == 2
        for index in range(24):  # a new connection each time: the kernel spreads them
            assert chat(server.http_port, "echo", "hi", request_id=f"http-{index}").status == 200
            with grpc.insecure_channel(server.grpc_target) as channel:
                calls.streaming_chat(channel, "echo", calls.chat_request("hi"), metadata=[("request_id", f"g-{index}")])
        assert wait_for(lambda: _worker_of(server, "g-23") is not None and _worker_of(server, "http-23") is not None)
        http_pids = {_worker_of(server, f"http-{index}") for index in range(24)}
        grpc_pids = {_worker_of(server, f"g-{index}") for index in range(24)}
        assert http_pids == workers, http_pids
        assert grpc_pids == workers, grpc_pids
        assert call(server.http_port, "GET", "/readyz").status == 200


def test_kill_9_loses_only_that_workers_chats_and_is_replaced() -> None:
    with FakeInThread(latency_ms=2000.0) as fake:
        env = {**override_env(fake), **WORKERS_ENV}
        with start_server(http=True, env=env, extra_args=WORKERS) as server:
            victim, survivor = sorted(_children(server.process.pid))
            threads, results = _chats_in_threads(server.http_port, 16, "k-")
            assert wait_for(lambda: len(fake.requests) == 16, timeout=10)
            os.kill(victim, signal.SIGKILL)
            for thread in threads:
                thread.join(20)
            done = {rid for rid, reply in results.items() if _finished(reply, rid)}
            lost = set(results) - done
            assert len(results) == 16 and done and lost, results
            assert all(_worker_of(server, rid) == survivor for rid in done)
            assert wait_for(lambda: len(_children(server.process.pid)) == 2, timeout=15)
            replacement = _children(server.process.pid) - {survivor}
            assert replacement and victim not in replacement
            assert wait_for(lambda: call(server.http_port, "GET", "/readyz").status == 200)
            for index in range(8):  # the replacement serves too
                assert _finished(chat(server.http_port, "echo", f"after-{index}"), f"after-{index}")
            assert server.process.poll() is None


def test_sigterm_drains_every_worker_and_exits_0() -> None:
    with FakeInThread(latency_ms=1500.0) as fake:
        with start_server(http=True, env={**override_env(fake), **WORKERS_ENV}, extra_args=WORKERS) as server:
            workers = _children(server.process.pid)
            threads, results = _chats_in_threads(server.http_port, 12, "d-")
            assert wait_for(lambda: len(fake.requests) == 12, timeout=10)
            server.process.send_signal(signal.SIGTERM)
            for thread in threads:
                thread.join(20)
            assert all(_finished(reply, rid) for rid, reply in results.items()), results
            assert server.process.wait(20) == 0
            served_by = {_worker_of(server, rid) for rid in results}
            assert served_by == workers
            # Gone once reaped (they were the exited parent's children): wait for that.
            assert wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers)), workers


def test_workers_whose_parent_is_killed_drain_and_exit() -> None:
    """kill -9 of the parent (it cannot tell its workers): they must not go on serving the
    ports unsupervised. Each notices it was re-parented, drains (its chat in flight ends
    well) and exits."""
    with FakeInThread(latency_ms=1000.0) as fake:
        with start_server(http=True, env={**override_env(fake), **WORKERS_ENV}, extra_args=WORKERS) as server:
            workers = _children(server.process.pid)
            try:
                threads, results = _chats_in_threads(server.http_port, 4, "o-")
                assert wait_for(lambda: len(fake.requests) == 4, timeout=10)
                server.process.kill()
                server.process.wait(5)
                for thread in threads:
                    thread.join(20)
                assert all(_finished(reply, rid) for rid, reply in results.items()), results
                # A bound for "nothing hangs" only: with nothing in flight a worker exits at once.
                assert wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers), timeout=30)
                assert server.log().count("the parent process (pid ") == len(workers)
            finally:  # a failed run leaves no orphans behind
                for pid in workers:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)


def _a2a(port: int, method: str, params: dict[str, object]) -> dict[str, object]:
    """One A2A JSON-RPC call on a new connection (the kernel picks the worker)."""
    reply = call(port, "POST", "/a2a/echo", {"jsonrpc": "2.0", "id": 1, "method": method,
                                             "params": {"tenant": "echo", **params}},
                 headers={"A2A-Version": "1.0"})
    assert reply.status == 200, reply.body
    answer: dict[str, object] = reply.json()
    return answer


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed (make test installs it)")
def test_a2a_on_workers_sharing_redis_finds_every_task_from_every_worker(tmp_path: Path) -> None:
    """With AGENT_REDIS_URL the workers share A2A's tasks: each task sent reads back whichever
    worker each read reaches (without Redis this would fail about half the reads)."""
    redis = RedisProcess(tmp_path)
    redis.start()
    try:
        with start_server(http=True, env={**WORKERS_ENV, "AGENT_A2A_ENABLE": "true", "AGENT_REDIS_URL": redis.url},
                          extra_args=WORKERS) as server:
            tasks = []
            for index in range(4):
                sent = _a2a(server.http_port, "SendMessage", {"message": {
                    "messageId": f"m{index}", "role": "ROLE_USER", "parts": [{"text": f"hi {index}"}]}})
                tasks.append(sent["result"]["task"]["id"])  # type: ignore[index]
            for _ in range(6):
                for task_id in tasks:
                    got = _a2a(server.http_port, "GetTask", {"id": task_id})
                    assert "error" not in got, got
                    assert got["result"]["id"] == task_id  # type: ignore[index]
                    assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
            assert len(_children(server.process.pid)) == 2
    finally:
        redis.stop()


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--workers", "0"], {}, "--workers / AGENT_WORKERS must be"),
        (["--workers", "2", "--metrics-port", "1"], {}, "--metrics-port cannot be shared"),
        ([], {"AGENT_GATEWAY_INVOKER": "carrier-pigeon"}, "AGENT_GATEWAY_INVOKER must be one of"),
    ],
)
def test_unusable_settings_are_refused_at_start(args: list[str], env: dict[str, str], message: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "neuro_san.cli.main", "serve", "--port", "0", "--no-http", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **env},
    )  # fmt: skip
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert message in completed.stderr
