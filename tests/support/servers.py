"""Start the real server (``neuro-san serve``) as a subprocess on free loopback ports.

Tests talk to it over real sockets; nothing of our API is mocked. The server prints
``READY grpc=<port> http=<port>`` once it listens, which is what we wait for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_MANIFEST = ROOT / "neuro_san" / "registries" / "manifest.hocon"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` different free ports: each socket is held until all are chosen, so two calls
    of :func:`free_port` cannot hand out the same port twice (CI saw gRPC and HTTP collide)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    grpc_port: int
    http_port: int
    output: list[str] = field(default_factory=list)

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def log(self) -> str:
        return "".join(self.output)

    def terminate(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


def _pump(process: subprocess.Popen[str], sink: list[str], ready: threading.Event) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        sink.append(line)
        if line.startswith("READY "):
            ready.set()
    ready.set()


def launch(
    manifest: Path | None = None,
    env: dict[str, str] | None = None,
    http: bool = False,
    extra_args: list[str] | None = None,
    timeout: float = 20.0,
    http_port: int | None = None,
) -> ServerProcess:
    """Start ``neuro-san serve`` and wait until it is ready. The caller terminates it.
    ``http_port``: a port chosen beforehand (when the settings must name the server's URL)."""
    grpc_port, spare = free_ports(2)
    http_port = (http_port or spare) if http else 0
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", "--port", str(grpc_port)]
    args += ["--http-port", str(http_port)] if http else ["--no-http"]
    args += ["--manifest", str(manifest or BUNDLED_MANIFEST)]
    args += extra_args or []
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("AGENT_LLM_OVERRIDE", None) if "AGENT_LLM_OVERRIDE" not in (env or {}) else None
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env, cwd=ROOT
    )
    server = ServerProcess(process, grpc_port, http_port)
    ready = threading.Event()
    threading.Thread(target=_pump, args=(process, server.output, ready), daemon=True).start()
    deadline = time.monotonic() + timeout
    while not ready.wait(0.05):
        if time.monotonic() > deadline:
            server.terminate()
            raise TimeoutError(f"server did not start in {timeout} s:\n{server.log()}")
    if process.poll() is not None:
        raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
    return server


@contextlib.contextmanager
def start_server(
    manifest: Path | None = None,
    env: dict[str, str] | None = None,
    http: bool = False,
    extra_args: list[str] | None = None,
    http_port: int | None = None,
) -> Iterator[ServerProcess]:
    """A running server for the duration of the ``with`` block."""
    server = launch(manifest, env, http, extra_args, http_port=http_port)
    try:
        yield server
    finally:
        server.terminate()


#: The gateway's two invokers inside ``neuro-san serve`` (AGENT_GATEWAY_INVOKER): the
#: default in-process one and the gRPC hop the standalone gateway uses.
INVOKERS = ("inprocess", "grpc")


def invoker_env(invoker: str) -> dict[str, str]:
    return {"AGENT_GATEWAY_INVOKER": invoker}


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes (or resets) ``sock`` within ``within`` seconds; what it
    sends first is read and dropped."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
        return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
