"""The playground on the HTTP port, without a browser: content negotiation at ``/``
(page for browsers, neuro-san's health body for everyone else), the assets and their
security headers, ``--no-playground`` / ``AGENT_PLAYGROUND``, the standalone gateway,
and serve's start-up line. Real ``neuro-san serve`` processes on free loopback ports."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from aiohttp.test_utils import make_mocked_request

from gateway.host.frontends import FrontEndRoute
from gateway.playground.assets import REQUIRED, AssetTable, load_assets
from gateway.playground.frontend import PlaygroundFrontEnd
from gateway.playground.switch import playground_enabled
from neuro_san.cli.startup_line import urls_line
from tests.gateway_http_support import call, wait_for
from tests.support.servers import ROOT, ServerProcess, free_port, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_a_probe_at_root_gets_neuro_sans_health_body(server: ServerProcess) -> None:
    for accept in ("*/*", "application/json", None):
        reply = call(server.http_port, "GET", "/", headers={"Accept": accept} if accept else {})
        assert reply.status == 200
        body = reply.json()
        assert set(body) == {"service", "status", "versions"}
        assert body["status"] == "ok" and body["service"] == "neuro-san.Agent"
        assert isinstance(body["versions"], dict) and body["versions"]
        assert reply.headers["Vary"] == "Accept"


def test_a_browser_at_root_gets_the_page_with_a_strict_policy(server: ServerProcess) -> None:
    reply = call(server.http_port, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b'<script type="module" src="/playground/js/main.js">' in reply.body
    assert b"<script>" not in reply.body and b" style=" not in reply.body  # nothing inline
    policy = reply.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "connect-src 'self'" in policy and "require-trusted-types-for 'script'" in policy
    assert reply.headers["X-Content-Type-Options"] == "nosniff"


def test_every_asset_is_served_with_its_type_and_nothing_else_is(server: ServerProcess) -> None:
    types = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
    for name in REQUIRED:
        reply = call(server.http_port, "GET", f"/playground/{name}")
        assert reply.status == 200, name
        assert reply.headers["Content-Type"].startswith(types[Path(name).suffix]), name
        assert reply.headers["X-Content-Type-Options"] == "nosniff"
        again = call(server.http_port, "GET", f"/playground/{name}", headers={"If-None-Match": reply.headers["ETag"]})
        assert again.status == 304
    for path in ("/playground/nope.js", "/playground/%2e%2e/assets.py", "/playground/..%2fswitch.py",
                 "/playground/js/../../frontend.py"):
        assert call(server.http_port, "GET", path).status == 404, path
    assert call(server.http_port, "POST", "/playground/app.css").status == 405


def test_no_playground_flag_keeps_health_at_root_and_serves_no_page() -> None:
    with start_server(http=True, extra_args=["--no-playground"]) as running:
        reply = call(running.http_port, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
        assert reply.status == 200 and reply.json()["status"] == "ok"
        assert call(running.http_port, "GET", "/playground/index.html").status == 404
        assert "playground" not in running.log().split("READY")[0].split("neuro-san:")[-1].split("\n")[0]


def test_agent_playground_zero_turns_it_off_and_a_bad_value_is_refused() -> None:
    with start_server(http=True, env={"AGENT_PLAYGROUND": "0"}) as running:
        reply = call(running.http_port, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
        assert reply.headers["Content-Type"].startswith("application/json")
    command = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1",
               "--port", str(free_port()), "--http-port", str(free_port())]
    env = {**os.environ, "AGENT_PLAYGROUND": "maybe"}
    refused = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert refused.returncode == 2
    assert "AGENT_PLAYGROUND='maybe'" in refused.stdout + refused.stderr
    assert "READY" not in refused.stdout


def test_serve_prints_one_line_with_the_urls_and_keeps_the_ready_line(server: ServerProcess) -> None:
    lines = server.log().splitlines()
    [urls] = [line for line in lines if line.startswith("neuro-san: ")]
    base = f"http://127.0.0.1:{server.http_port}"
    grpc = f"127.0.0.1:{server.grpc_port}"
    assert urls == f"neuro-san: playground {base}/ · REST {base}/api/v1/ · gRPC {grpc} · MCP {base}/mcp"
    assert f"READY grpc={server.grpc_port} http={server.http_port} metrics=0" in lines


def test_the_standalone_gateway_serves_the_playground_too(server: ServerProcess) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", server.grpc_target, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )
    try:
        assert wait_for(lambda: _answers(port), timeout=15)
        page = call(port, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
        assert page.status == 200 and b"/playground/js/main.js" in page.body
        assert set(call(port, "GET", "/").json()) == {"service", "status", "versions"}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


def _answers(port: int) -> bool:
    try:
        return call(port, "GET", "/", timeout=2).status == 200
    except OSError:
        return False


def test_the_switch() -> None:
    assert playground_enabled(env={})
    assert playground_enabled(env={"AGENT_PLAYGROUND": "1"})
    assert not playground_enabled(env={"AGENT_PLAYGROUND": "off"})
    assert not playground_enabled(True, env={"AGENT_PLAYGROUND": "1"})
    with pytest.raises(ValueError, match="AGENT_PLAYGROUND"):
        playground_enabled(env={"AGENT_PLAYGROUND": "sometimes"})


def test_missing_assets_are_named(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html>")
    table = load_assets(tmp_path)
    assert "index.html" not in table.missing and "js/main.js" in table.missing
    assert load_assets().missing == ()  # the installed package has them all


def test_a_broken_install_says_what_is_missing(caplog: pytest.LogCaptureFixture) -> None:
    """Assets missing (a wheel built without its package data): logged at start, 503 with the list."""
    with caplog.at_level(logging.ERROR, logger="gateway.playground.frontend"):
        frontend = PlaygroundFrontEnd(cast(Any, None), True, AssetTable({}, ("index.html", "js/main.js")))
    assert "playground assets missing" in caplog.text and "js/main.js" in caplog.text
    request = make_mocked_request("GET", "/", headers={"Accept": "text/html"})
    response = asyncio.run(frontend.root(request, {}, b""))
    assert response.status == 503
    assert b"js/main.js" in cast(bytes, cast(Any, response).body)


class _RoutesOf:
    def __init__(self, *templates: str) -> None:
        self.templates = templates

    def routes(self) -> list[Any]:
        return [FrontEndRoute("GET", template, "x", cast(Any, None)) for template in self.templates]


def test_the_start_up_line_names_mcp_only_when_it_is_mounted() -> None:
    def handle(*frontends: _RoutesOf) -> Any:
        return SimpleNamespace(scheme="http", port=8080, host=SimpleNamespace(frontends=list(frontends)))

    plain = urls_line("0.0.0.0", 30011, handle(_RoutesOf("/", "/playground/{path=**}")), True)
    assert plain == ("neuro-san: playground http://127.0.0.1:8080/ · REST http://127.0.0.1:8080/api/v1/"
                     " · gRPC 127.0.0.1:30011")
    with_mcp = urls_line("127.0.0.1", 1, handle(_RoutesOf("/"), _RoutesOf("/mcp")), True)
    assert with_mcp.endswith(" · MCP http://127.0.0.1:8080/mcp")
    assert urls_line("::1", 1, handle(_RoutesOf("/")), False) == (
        "neuro-san: REST http://[::1]:8080/api/v1/ · gRPC [::1]:1")
    assert urls_line("127.0.0.1", 1, None, False) == "neuro-san: gRPC 127.0.0.1:1"
