"""The header deadline holds for every request on a connection, not only its first:
a whole request followed by half of a second one is closed after the header deadline,
not kept until the idle timeout (gateway/host/connection_guard.py)."""

from __future__ import annotations

import socket
import time

import pytest

from tests.support.servers import closed_by_server, start_server

#: Takes seconds (starts a server): not in `make test-fast`.
pytestmark = pytest.mark.slow

HEADER_SECONDS = 1.0
IDLE_SECONDS = 30.0
WHOLE = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
HALF = b"GET /healthz HTTP/1.1\r\nHost: 12"


def _read_one_response(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    return data


def test_a_pipelined_half_request_is_closed_at_the_header_deadline() -> None:
    env = {
        "AGENT_HTTP_HEADER_TIMEOUT_SECONDS": str(HEADER_SECONDS),
        "AGENT_HTTP_IDLE_TIMEOUT_SECONDS": str(IDLE_SECONDS),
    }
    with start_server(env=env, http=True) as server:
        # In one write: the parser sees the whole request and keeps the half.
        together = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
        # In two writes: the half arrives after the first answer.
        apart = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
        # A plain keep-alive connection stays open past the header deadline.
        idle = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
        try:
            together.sendall(WHOLE + HALF)
            assert _read_one_response(together).startswith(b"HTTP/1.1 200")
            apart.sendall(WHOLE)
            assert _read_one_response(apart).startswith(b"HTTP/1.1 200")
            apart.sendall(HALF)
            idle.sendall(WHOLE)
            assert _read_one_response(idle).startswith(b"HTTP/1.1 200")
            started = time.monotonic()
            assert closed_by_server(together, HEADER_SECONDS + 3)
            assert closed_by_server(apart, HEADER_SECONDS + 3)
            assert time.monotonic() - started < HEADER_SECONDS + 4
            # The idle one is still served (kept alive: not closed by the header deadline).
            idle.sendall(WHOLE)
            assert _read_one_response(idle).startswith(b"HTTP/1.1 200")
        finally:
            for sock in (together, apart, idle):
                sock.close()
