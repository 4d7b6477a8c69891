"""Replicas behind a real load balancer with a real Redis, all on loopback, for the
scale-out tests: ``redis-server``, N ``neuro-san serve`` processes sharing it
(``AGENT_REDIS_URL``), and Debian's ``haproxy`` in front, round-robin without
stickiness: HTTP in ``mode http`` (each response says which replica served it in
``X-Served-By``), gRPC in ``mode tcp``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.servers import ServerProcess, free_port, launch
from tests.support.waits import wait_for_port

SERVED_BY = "X-Served-By"


def tools_missing() -> str | None:
    """Why the cluster cannot start here (``make test`` installs both), or None."""
    missing = [tool for tool in ("redis-server", "haproxy") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not installed (make test installs them)" if missing else None


def _wait_port(port: int, within: float = 10.0) -> None:
    if not wait_for_port(port, within):
        raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


class RedisProcess:
    """A throw-away redis-server (no persistence) that can be stopped and started again."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait_port(self.port)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self.process = None


def haproxy_config(http_port: int, grpc_port: int, replicas: list[ServerProcess]) -> str:
    http_servers = "\n".join(f"  server r{n} 127.0.0.1:{r.http_port} check inter 300 fall 1 rise 1"
                             for n, r in enumerate(replicas))
    grpc_servers = "\n".join(f"  server r{n} 127.0.0.1:{r.grpc_port} check inter 300 fall 1 rise 1"
                             for n, r in enumerate(replicas))
    return f"""global
  maxconn 512

defaults
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout tunnel 120s
  option redispatch
  retries 2

frontend http_in
  mode http
  bind 127.0.0.1:{http_port}
  default_backend replicas_http

backend replicas_http
  mode http
  balance roundrobin
  http-response set-header {SERVED_BY} %[srv_name]
{http_servers}

frontend grpc_in
  mode tcp
  bind 127.0.0.1:{grpc_port}
  default_backend replicas_grpc

backend replicas_grpc
  mode tcp
  balance roundrobin
{grpc_servers}
"""


@dataclass
class Cluster:
    redis: RedisProcess
    replicas: list[ServerProcess]
    http_port: int
    grpc_port: int
    balancer: subprocess.Popen[bytes]

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


@contextlib.contextmanager
def cluster(folder: Path, env: dict[str, str], replicas: int = 3) -> Iterator[Cluster]:
    """Redis, ``replicas`` servers sharing it and haproxy in front, until the block ends."""
    redis = RedisProcess(folder)
    redis.start()
    with contextlib.ExitStack() as stack:
        stack.callback(redis.stop)
        servers: list[ServerProcess] = []
        for _ in range(replicas):
            server = launch(env={"AGENT_REDIS_URL": redis.url, **env}, http=True)
            stack.callback(server.terminate)
            servers.append(server)
        http_port, grpc_port = free_port(), free_port()
        config = folder / "haproxy.cfg"
        config.write_text(haproxy_config(http_port, grpc_port, servers))
        balancer = subprocess.Popen(["haproxy", "-db", "-f", str(config)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(balancer.wait, 5)
        stack.callback(balancer.kill)
        _wait_port(http_port)
        _wait_port(grpc_port)
        yield Cluster(redis, servers, http_port, grpc_port, balancer)


def main() -> None:
    """``make cluster``: N replicas behind haproxy with one Redis, until Ctrl-C."""
    import argparse
    import os
    import signal
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--replicas", type=int, default=3)
    args = parser.parse_args()
    problem = tools_missing()
    if problem:
        raise SystemExit(f"cannot start the cluster: {problem}")
    # Everything the replicas need comes from this environment (AGENT_LLM_OVERRIDE, keys…).
    passed = {k: v for k, v in os.environ.items() if k.startswith(("AGENT_", "OPENAI_", "ANTHROPIC_"))}
    with tempfile.TemporaryDirectory() as folder, cluster(Path(folder), passed, args.replicas) as running:
        print(f"load balancer: HTTP {running.http_base}  gRPC {running.grpc_target}  (haproxy, round-robin)")
        for n, replica in enumerate(running.replicas):
            print(f"  replica r{n}: HTTP {replica.http_base}  gRPC {replica.grpc_target}")
        print(f"shared state: {running.redis.url}   Ctrl-C stops everything", flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop as for Ctrl-C: clean up
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass

if __name__ == "__main__":
    main()
