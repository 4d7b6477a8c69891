"""Slow and flooding clients against a real ``neuro-san serve``: HTTP deadlines and
connection caps (gateway/connection_guard.py), gRPC connection limits (grpc_limits.py)."""

from __future__ import annotations

import http.client
import socket
import struct
import time

import pytest

from gateway.host.connection_guard import ConnectionLimits
from neuro_san.service.grpc_limits import GrpcConnectionLimits
from tests.support import load
from tests.support.servers import closed_by_server, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

HEADER_SECONDS = 1.0
IDLE_SECONDS = 2.0
PER_ADDRESS = 300
SLOWLORIS = 250
FLOOD = 400


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    return sock


def _settled_fds(pid: int) -> int:
    """The server's descriptors once their count stops moving (the connection just used
    closed on its side too): what later counts are compared with."""
    counts = [load.open_fds(pid)]

    def steady() -> bool:
        counts.append(load.open_fds(pid))
        return counts[-1] == counts[-2]

    assert load.wait_until(steady, 5), counts
    return counts[-1]


def _served(port: int, source: str = "127.0.0.1") -> int:
    """The status of a complete, ordinary request from ``source``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request("GET", "/api/v1/list")
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()




# Both loops: their transports differ (uvloop's is no asyncio.WriteTransport subclass, which
# once turned the 503 refusal into a bare close under uvloop only).
@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_slowloris_and_a_connection_flood_are_bounded(event_loop: str) -> None:
    if event_loop == "uvloop":
        pytest.importorskip("uvloop")
    env = {
        "AGENT_EVENT_LOOP": event_loop,
        "AGENT_HTTP_HEADER_TIMEOUT_SECONDS": str(HEADER_SECONDS),
        "AGENT_HTTP_IDLE_TIMEOUT_SECONDS": str(IDLE_SECONDS),
        "AGENT_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS),
    }
    with start_server(env=env, http=True) as server:
        pid = server.process.pid
        assert _served(server.http_port) == 200
        idle_fds = _settled_fds(pid)

        # Slowloris: hundreds of half request lines, then nothing.
        partial = [_connect(server.http_port) for _ in range(SLOWLORIS)]
        for sock in partial:
            sock.sendall(b"GET /api/v1/list HT")
        assert load.wait_until(lambda: load.open_fds(pid) >= idle_fds + SLOWLORIS // 2, 5)
        assert _served(server.http_port) == 200  # others are still served meanwhile
        started = time.monotonic()
        closed = [closed_by_server(sock, HEADER_SECONDS + 4) for sock in partial]
        assert all(closed), f"{closed.count(False)} partial requests still open"
        assert time.monotonic() - started < HEADER_SECONDS + 4
        for sock in partial:
            sock.close()
        assert load.wait_until(lambda: load.open_fds(pid) <= idle_fds, 5), (
            f"{load.open_fds(pid)} fds after the slowloris, {idle_fds} before"
        )

        # A flood from one address: past the per-address cap, a clean 503 at once.
        flood = [_connect(server.http_port) for _ in range(FLOOD)]
        refused = []
        for sock in flood[PER_ADDRESS:]:
            sock.settimeout(5)
            refused.append(sock.recv(4096))
        assert all(r.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in r for r in refused), refused[:1]
        # Another client (address) is served while this one holds its maximum.
        assert _served(server.http_port, source="127.0.0.2") == 200
        # Idle connections are closed after the idle timeout; fds go back.
        assert all(closed_by_server(sock, IDLE_SECONDS + 4) for sock in flood[:PER_ADDRESS])
        for sock in flood:
            sock.close()
        assert load.wait_until(lambda: load.open_fds(pid) <= idle_fds, 5), (
            f"{load.open_fds(pid)} fds after the flood, {idle_fds} before"
        )
        assert _served(server.http_port) == 200


def test_a_stalled_body_gets_408_and_a_close() -> None:
    # The raw requests name the host "x": listed, so the body guard answers, not the Host one.
    env = {"AGENT_HTTP_BODY_READ_TIMEOUT_SECONDS": "1", "AGENT_HTTP_ALLOWED_HOSTS": "x"}
    with start_server(env=env, http=True) as server:
        sock = _connect(server.http_port)
        sock.sendall(
            b"POST /api/v1/echo/streaming_chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{\"user_message\": "
        )
        sock.settimeout(6)
        reply = sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert closed_by_server(sock, 5)
        sock.close()


def test_a_trickled_body_is_cut_off_by_the_total_deadline() -> None:
    # Each byte arrives well within the per-read deadline; only the total one stops it.
    env = {"AGENT_HTTP_BODY_READ_TIMEOUT_SECONDS": "5", "AGENT_HTTP_BODY_TOTAL_TIMEOUT_SECONDS": "1.5",
           "AGENT_HTTP_ALLOWED_HOSTS": "x"}
    with start_server(env=env, http=True) as server:
        sock = _connect(server.http_port)
        sock.sendall(
            b"POST /api/v1/echo/streaming_chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n"
        )
        sock.settimeout(0.3)
        started = time.monotonic()
        reply = b""
        while time.monotonic() - started < 6 and not reply:
            try:
                sock.sendall(b" ")
                reply = sock.recv(4096)
            except TimeoutError:
                continue
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert time.monotonic() - started < 4
        sock.settimeout(5)
        assert closed_by_server(sock, 5)
        sock.close()


# -- gRPC --------------------------------------------------------------------------------

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_SETTINGS, _PING, _GOAWAY = 4, 6, 7


def _frame(kind: int, flags: int = 0, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", 0) + payload


def _read_frame(sock: socket.socket) -> tuple[int, int, bytes] | None:
    head = _read_exactly(sock, 9)
    if head is None:
        return None
    length = int.from_bytes(head[:3], "big")
    payload = _read_exactly(sock, length) if length else b""
    return head[3], head[4], payload or b""


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _h2_connection(port: int) -> tuple[socket.socket, dict[int, int]]:
    """A raw HTTP/2 connection after the settings exchange; the server's settings."""
    sock = _connect(port)
    sock.sendall(_PREFACE + _frame(_SETTINGS))
    settings: dict[int, int] = {}
    while True:
        frame = _read_frame(sock)
        assert frame is not None
        kind, flags, payload = frame
        if kind == _SETTINGS and not flags & 1:
            for offset in range(0, len(payload), 6):
                key, value = struct.unpack(">HI", payload[offset : offset + 6])
                settings[key] = value
            sock.sendall(_frame(_SETTINGS, 1))
            return sock, settings


def _goaway_then_close(sock: socket.socket, within: float) -> bytes | None:
    """The GOAWAY frame's payload, once the server has also closed; None if it did not."""
    sock.settimeout(within)
    goaway = None
    try:
        while (frame := _read_frame(sock)) is not None:
            if frame[0] == _GOAWAY:
                goaway = frame[2]
    except TimeoutError:
        return None
    return goaway


def test_grpc_idle_connections_ping_floods_and_streams_per_connection_are_bounded() -> None:
    env = {
        "AGENT_GRPC_MAX_CONNECTION_IDLE_SECONDS": "1",
        "AGENT_GRPC_MAX_CONCURRENT_STREAMS": "7",
    }
    with start_server(env=env) as server:
        pid = server.process.pid
        idle_fds = _settled_fds(pid)
        sock, settings = _h2_connection(server.grpc_port)
        assert settings.get(3) == 7, settings  # SETTINGS_MAX_CONCURRENT_STREAMS
        started = time.monotonic()
        assert _goaway_then_close(sock, 8) is not None, "an idle connection was not closed"
        assert time.monotonic() - started < 8
        sock.close()

        # Keepalive enforcement: pings far more often than allowed end in GOAWAY
        # ENHANCE_YOUR_CALM (0xb) "too_many_pings".
        sock, _ = _h2_connection(server.grpc_port)
        goaway = None
        try:
            for n in range(50):
                sock.sendall(_frame(_PING, 0, n.to_bytes(8, "big")))
                time.sleep(0.01)  # the behaviour under test: pings paced far above the allowed rate
        except OSError:
            pass
        goaway = _goaway_then_close(sock, 5)
        sock.close()
        assert goaway is not None and int.from_bytes(goaway[4:8], "big") == 0xB, goaway
        assert load.wait_until(lambda: load.open_fds(pid) <= idle_fds, 5)


def test_bad_limit_settings_are_refused_at_start() -> None:
    with pytest.raises(ValueError, match="AGENT_HTTP_MAX_CONNECTIONS"):
        ConnectionLimits.from_env({"AGENT_HTTP_MAX_CONNECTIONS": "lots"})
    with pytest.raises(ValueError, match="must not be negative"):
        GrpcConnectionLimits.from_env({"AGENT_GRPC_KEEPALIVE_SECONDS": "-1"})
    assert ConnectionLimits.from_env({"AGENT_HTTP_IDLE_TIMEOUT_SECONDS": "5"}).idle_seconds == 5
    assert GrpcConnectionLimits.from_env({"AGENT_GRPC_MAX_CONCURRENT_STREAMS": "9"}).max_concurrent_streams == 9


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("AGENT_GRPC_KEEPALIVE_SECONDS", "x", "AGENT_GRPC_KEEPALIVE_SECONDS='x' is not a number"),
        ("AGENT_RATE_LIMIT_CHATS", "many", "AGENT_RATE_LIMIT_CHATS='many' is not a number"),
        ("AGENT_HTTP_MAX_CONNECTIONS", "lots", "AGENT_HTTP_MAX_CONNECTIONS='lots' is not a number"),
        # These were ignored with a warning before; settings that change behaviour are refused.
        ("AGENT_MAX_CONCURRENT_REQUESTS", "many", "AGENT_MAX_CONCURRENT_REQUESTS='many' is not a number"),
        ("AGENT_MAX_TOKENS_PER_REQUEST", "-3", "AGENT_MAX_TOKENS_PER_REQUEST='-3' must not be negative"),
    ],
)
def test_serve_refuses_a_bad_limit_setting_with_a_clear_message(name: str, value: str, said: str) -> None:
    import os
    import subprocess
    import sys

    completed = subprocess.run(
        [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", "--port", "0", "--http-port", "0"],
        env={**os.environ, name: value}, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 2, completed.stdout[-2000:] + completed.stderr[-2000:]
    assert said in completed.stdout + completed.stderr
