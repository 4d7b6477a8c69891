"""Run by tests/studio/test_offline_guard.py in a fresh interpreter (the offline guard on
its ``PYTHONPATH``, or not): reaches for loopback and for the internet every way a server's
clients do (plain sockets as urllib3 and requests use them, asyncio as aiohttp, httpx and
the MCP clients use it, on asyncio's own loop and on uvloop when installed) and prints, as
JSON, what each attempt did. Stdlib only (and uvloop), so it runs in any venv.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

#: RFC 5737's documentation network and RFC 3849's prefix: never anybody's server.
TEST_NET = "192.0.2.1"
TEST_NET6 = "2001:db8::1"
NAME = "example.com"
#: Without the guard an attempt could wait this long; with it, none should.
TIMEOUT = 3.0


def _answer(connection: socket.socket) -> None:
    # An HTTP client gets an answer to its request; a plain connect, closed at once, none.
    with connection:
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(4096)
            if not chunk:
                return
            received += chunk
        connection.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")


def _serve(server: socket.socket) -> None:
    while True:
        connection, _ = server.accept()
        threading.Thread(target=_answer, args=(connection,), daemon=True).start()


def _listen(family: int, address: Any) -> Any:
    server = socket.socket(family, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(16)
    threading.Thread(target=_serve, args=(server,), daemon=True).start()
    return server.getsockname()


def _attempt(call: Callable[[], object]) -> dict[str, Any]:
    start = time.monotonic()
    try:
        call()
    except OSError as error:
        outcome: dict[str, Any] = {"ok": False, "error": type(error).__name__, "message": str(error)}
    else:
        outcome = {"ok": True}
    outcome["seconds"] = round(time.monotonic() - start, 3)
    return outcome


def _close(sock: socket.socket) -> None:
    sock.close()


def plain_cases(port: int, unix_path: str) -> dict[str, Callable[[], object]]:
    def connect_ex() -> None:
        with socket.socket() as sock:
            sock.settimeout(TIMEOUT)
            code = sock.connect_ex((TEST_NET, 80))
            if code:
                raise OSError(code, os.strerror(code))

    def unix() -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(unix_path)

    def udp() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"probe", (TEST_NET, 53))

    def ipv6() -> None:
        with socket.socket(socket.AF_INET6) as sock:
            sock.settimeout(TIMEOUT)
            sock.connect((TEST_NET6, 80))

    return {
        "loopback": lambda: _close(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)),
        "localhost": lambda: _close(socket.create_connection(("localhost", port), timeout=TIMEOUT)),
        "unix": unix,
        "test-net": lambda: _close(socket.create_connection((TEST_NET, 80), timeout=TIMEOUT)),
        "name": lambda: _close(socket.create_connection((NAME, 80), timeout=TIMEOUT)),
        "getaddrinfo name": lambda: socket.getaddrinfo(NAME, 443),
        "gethostbyname name": lambda: socket.gethostbyname(NAME),
        "connect_ex test-net": connect_ex,
        "udp sendto test-net": udp,
        "ipv6 test-net": ipv6,
    }


def async_cases(port: int) -> dict[str, Callable[[], Awaitable[object]]]:
    async def open_connection(host: str, target_port: int) -> None:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, target_port), TIMEOUT)
        writer.close()

    async def sock_connect() -> None:
        with socket.socket() as sock:
            sock.setblocking(False)
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (TEST_NET, 80)), TIMEOUT)

    async def datagram() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=(TEST_NET, 53))
        transport.close()

    async def getaddrinfo() -> None:
        await asyncio.wait_for(asyncio.get_running_loop().getaddrinfo(NAME, 443), TIMEOUT)

    return {
        "loopback": lambda: open_connection("127.0.0.1", port),
        "localhost": lambda: open_connection("localhost", port),
        "test-net": lambda: open_connection(TEST_NET, 80),
        "name": lambda: open_connection(NAME, 80),
        "getaddrinfo name": getaddrinfo,
        "sock_connect test-net": sock_connect,
        "datagram test-net": datagram,
    }


def client_cases(port: int) -> dict[str, Callable[[], Awaitable[object]]]:
    """The HTTP clients the servers' tools use (MCP's is httpx), where installed."""
    cases: dict[str, Callable[[], Awaitable[object]]] = {}
    if importlib.util.find_spec("aiohttp") is not None:
        import aiohttp

        async def aiohttp_get(url: str) -> None:
            timeout = aiohttp.ClientTimeout(total=TIMEOUT)
            async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as response:
                await response.read()

        cases["aiohttp loopback"] = lambda: aiohttp_get(f"http://127.0.0.1:{port}/")
        cases["aiohttp name"] = lambda: aiohttp_get(f"https://{NAME}/")
    if importlib.util.find_spec("httpx") is not None:
        import httpx

        async def httpx_get(url: str) -> None:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                await client.get(url)

        cases["httpx loopback"] = lambda: httpx_get(f"http://127.0.0.1:{port}/")
        cases["httpx name"] = lambda: httpx_get(f"https://{NAME}/")
        cases["httpx test-net"] = lambda: httpx_get(f"http://{TEST_NET}/")
    return cases


def _messages(error: BaseException) -> str:
    """The error's message and its causes' (a client wraps the socket's error)."""
    seen: list[str] = []
    current: BaseException | None = error
    while current is not None and len(seen) < 8:
        seen.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return " <- ".join(seen)


def _run_async(runner: Callable[[Any], Any], port: int) -> dict[str, dict[str, Any]]:
    async def every() -> dict[str, dict[str, Any]]:
        results: dict[str, dict[str, Any]] = {}
        for name, make in {**async_cases(port), **client_cases(port)}.items():
            start = time.monotonic()
            try:
                await make()
            except OSError as error:
                results[name] = {"ok": False, "error": type(error).__name__, "message": str(error)}
            except Exception as error:  # a client's own error class, wrapping the socket's
                results[name] = {"ok": False, "error": type(error).__name__, "message": _messages(error)}
            else:
                results[name] = {"ok": True}
            results[name]["seconds"] = round(time.monotonic() - start, 3)
        return results

    return dict(runner(every()))


def main() -> None:
    port = _listen(socket.AF_INET, ("127.0.0.1", 0))[1]
    unix_path = os.path.join(tempfile.mkdtemp(), "probe.sock")
    _listen(socket.AF_UNIX, unix_path)
    results = {f"socket {name}": _attempt(call) for name, call in plain_cases(port, unix_path).items()}
    loops: dict[str, Callable[[Any], Any]] = {"asyncio": asyncio.run}
    if importlib.util.find_spec("uvloop") is not None:
        import uvloop

        loops["uvloop"] = uvloop.run
    for loop_name, runner in loops.items():
        for name, outcome in _run_async(runner, port).items():
            results[f"{loop_name} {name}"] = outcome
    json.dump({"loops": sorted(loops), "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
