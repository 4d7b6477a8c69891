"""DNS rebinding: one ``Host`` allowlist on every route, and MCP's Origin rule on top of it.

A page whose DNS name is rebound to 127.0.0.1 reaches a local server with its own name
in ``Host`` and ``Origin``. Raw HTTP to a real ``neuro-san serve`` on loopback: a foreign
``Host`` is 421 on every front-end (phrased as each route phrases refusals), loopback
names, addresses and ``AGENT_HTTP_ALLOWED_HOSTS`` names are served, and a bad setting is
refused at start by ``serve`` and the standalone gateway alike.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.composition import protocol_frontends
from gateway.host.allowed_hosts import AllowedHosts
from gateway.host.app import Host
from gateway.host.config import GatewayConfig
from gateway.host.frontends import FrontEndRoute
from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from gateway.mcp.origin import origin_allowed
from gateway.transcoder.frontend import default_services, rest_frontend
from tests.support.servers import ROOT, ServerProcess, free_port, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

ALLOWED = "*.corp.example, api.test"
SETTING_NAME = "AGENT_HTTP_ALLOWED_HOSTS"
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
SEND = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}


@pytest.fixture(scope="module")
def served() -> Iterator[ServerProcess]:
    with start_server(env={SETTING_NAME: ALLOWED, "AGENT_MCP_ENABLE": "true"}, http=True) as server:
        yield server


def _call(
    server: ServerProcess, method: str, path: str, host: str | None,
    body: Any = None, headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    """One request with exactly this ``Host`` (http.client sends ours instead of its own)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=15)
    try:
        sent = dict(headers or {})
        if host is not None:
            sent["Host"] = host
        payload = json.dumps(body).encode() if body is not None else None
        if payload is not None:
            sent.setdefault("Content-Type", "application/json")
        connection.request(method, path, body=payload, headers=sent)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


# ---- every front-end refuses a foreign Host, each in its own error shape ------------------


def _status_body(raw: bytes) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(raw)
    assert status["code"] == 3 and SETTING_NAME in status["message"], status
    return status


def _jsonrpc_body(raw: bytes) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(raw)
    assert envelope["jsonrpc"] == "2.0" and envelope["error"]["code"] == -32600, envelope
    assert SETTING_NAME in envelope["error"]["message"], envelope
    assert envelope["error"]["data"]["http_status"] == 421
    return envelope


FRONT_ENDS = [
    ("rest", "GET", "/api/v1/list", None, {}, _status_body),
    ("rest chat", "POST", "/api/v1/echo/streaming_chat", {"user_message": {"text": "hi"}}, {}, _status_body),
    ("mcp", "POST", "/mcp", INITIALIZE, MCP_HEADERS, _jsonrpc_body),
    ("a2a jsonrpc", "POST", "/a2a/echo", SEND, {"A2A-Version": "1.0"}, _jsonrpc_body),
    ("a2a rest", "GET", "/a2a/echo/rest/tasks", None, {"A2A-Version": "1.0"}, _status_body),
    ("a2a card", "GET", "/a2a/echo/.well-known/agent-card.json", None, {}, _status_body),
    ("playground", "GET", "/", None, {"Accept": "text/html"}, _status_body),
    ("health", "GET", "/readyz", None, {}, _status_body),
    ("metrics", "GET", "/metrics", None, {}, _status_body),
    ("preflight", "OPTIONS", "/api/v1/list", None, {"Origin": "http://evil.example.com",
                                                   "Access-Control-Request-Method": "GET"}, _status_body),
    ("no route", "GET", "/nothing/here", None, {}, _status_body),
]


@pytest.mark.parametrize(("method", "path", "body", "headers", "shape"),
                         [case[1:] for case in FRONT_ENDS], ids=[case[0] for case in FRONT_ENDS])
def test_a_foreign_host_is_421_on_every_front_end(
    served: ServerProcess, method: str, path: str, body: Any, headers: dict[str, str], shape: Any
) -> None:
    status, raw = _call(served, method, path, f"evil.example.com:{served.http_port}", body, headers)
    assert status == 421, raw
    shape(raw)


def _host_routes() -> list[FrontEndRoute]:
    """The route table of a host composed as ``serve`` composes it (MCP, A2A, playground)."""
    services = default_services()
    invoker = InProcessInvoker([], health=None, max_message_bytes=1 << 20)  # type: ignore[arg-type]
    frontends = [rest_frontend(services), *protocol_frontends(playground=True, env={"AGENT_MCP_ENABLE": "true"})]
    return Host(invoker, GatewayConfig(), methods_of(services), frontends).routes()


def test_every_route_of_the_table_refuses_a_foreign_host(served: ServerProcess) -> None:
    """By construction: a route added later is covered without a new test."""
    routes = _host_routes()
    assert len(routes) > 10
    for route in routes:
        path = re.sub(r"\{[^}]*\}", "echo", route.template.split(":")[0])
        status, raw = _call(served, route.http_method, path, "rebound.example.net", headers={"A2A-Version": "1.0"})
        assert status == 421, (route.http_method, route.template, raw)


# ---- what is served ---------------------------------------------------------------------


@pytest.mark.parametrize("host", [
    "localhost", "localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "LOCALHOST.:{port}",
    "app.localhost:1", "10.1.2.3:80", "[fd00::5]", "api.test", "api.test:443",
    "web.corp.example:{port}", "a.b.corp.example",
])
def test_loopback_addresses_and_listed_names_are_served(served: ServerProcess, host: str) -> None:
    status, raw = _call(served, "GET", "/api/v1/list", host.format(port=served.http_port))
    assert status == 200, raw


def test_a_request_without_host_is_served(served: ServerProcess) -> None:
    """HTTP/1.0 health checkers send none; no browser does, so there is nothing to rebind."""
    with socket.create_connection(("127.0.0.1", served.http_port), timeout=15) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.0 200") or reply.startswith(b"HTTP/1.1 200"), reply


@pytest.mark.parametrize("host", [
    "corp.example", "evilcorp.example", "api.test.evil.example", "user@localhost",
    "localhost:x", "localhost/x?", "[::1", "*.corp.example", "user@evil.example/x?", "evil.example.com.",
])
def test_names_the_list_does_not_cover_are_refused(served: ServerProcess, host: str) -> None:
    status, raw = _call(served, "GET", "/api/v1/list", host)
    assert status == 421, raw
    _status_body(raw)


# ---- MCP's Origin rule ------------------------------------------------------------------


def test_the_rebinding_case_on_mcp_is_refused(served: ServerProcess) -> None:
    """Host and Origin both the rebound name (200 before: "Origin equals Host")."""
    rebound = f"evil.example.com:{served.http_port}"
    status, raw = _call(served, "POST", "/mcp", rebound, INITIALIZE, {**MCP_HEADERS, "Origin": f"http://{rebound}"})
    assert status == 421, raw
    _jsonrpc_body(raw)


@pytest.mark.parametrize(("origin", "expected"), [
    ("http://localhost:{port}", 200),
    ("http://127.0.0.1:{port}", 200),
    ("http://web.corp.example", 200),
    ("http://evil.example.com:{port}", 403),
    ("http://10.9.9.9:{port}", 403),  # an address the request was not sent to
    ("http://user@localhost:{port}", 403),
])
def test_mcp_allows_only_origins_the_allowlist_admits(served: ServerProcess, origin: str, expected: int) -> None:
    port = served.http_port
    headers = {**MCP_HEADERS, "Origin": origin.format(port=port)}
    status, raw = _call(served, "POST", "/mcp", f"127.0.0.1:{port}", INITIALIZE, headers)
    assert status == expected, raw


def test_origin_equal_to_host_is_no_longer_enough() -> None:
    """The rule itself, with the request's Host allowed some other way (``*`` is not it)."""
    listed = AllowedHosts.parse("api.test")
    assert not origin_allowed("http://evil.example.com:8080", "evil.example.com:8080", listed, ())
    assert origin_allowed("http://api.test:8080", "api.test:8080", listed, ())
    assert origin_allowed("http://192.0.2.7:8080", "192.0.2.7:8080", listed, ())  # an address: same origin
    assert origin_allowed("http://evil.example.com", "x", listed, ("http://evil.example.com",))  # CORS list
    assert AllowedHosts().with_bound("myhost.lan").allows("myhost.lan:8080")


# ---- the setting ------------------------------------------------------------------------


def test_the_setting_is_parsed_and_bad_entries_are_refused() -> None:
    hosts = AllowedHosts.parse(" API.test., *.corp.example ,,")
    assert hosts.allows("api.test") and hosts.allows("x.corp.example:1") and not hosts.allows("corp.example")
    assert AllowedHosts.parse("*").allows("anything.example:9")
    for bad in ("http://x.example", "x.example:8080", "x.example/path", "*.", "a..b", "*x.example", "a b"):
        with pytest.raises(ValueError, match=SETTING_NAME):
            AllowedHosts.parse(bad)


@pytest.mark.parametrize("command", ["serve", "workers", "gateway"])
def test_a_bad_setting_is_refused_at_start(command: str) -> None:
    import os

    args = {
        "serve": ["serve", "--host", "127.0.0.1", "--port", "0", "--http-port", str(free_port())],
        "workers": ["serve", "--host", "127.0.0.1", "--port", "0", "--http-port", str(free_port()), "--workers", "2"],
        "gateway": ["gateway", "--port", str(free_port()), "--target", "127.0.0.1:1"],
    }[command]
    completed = subprocess.run(
        [sys.executable, "-m", "neuro_san.cli.main", *args],
        env={**os.environ, SETTING_NAME: "api.test, https://bad.example/"}, capture_output=True, text=True,
        timeout=60, cwd=ROOT,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output[-2000:]
    assert f"{SETTING_NAME}: 'https://bad.example/' is not a host name" in output, output[-2000:]
    assert "Traceback" not in output
