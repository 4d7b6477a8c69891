"""``/metrics`` on the gateway: the server's metrics through ``neuro-san serve``'s port,
the gateway's own HTTP metrics (route = method name, status, latency) moving with
requests, and the standalone gateway showing its own process's metrics."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway_http_support import PROBE_ARGS, call, chat, open_stream, wait_for
from tests.support.servers import ROOT, ServerProcess, free_port, start_server

_SAMPLE = re.compile(r"^(neuro_san_[a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+|NaN|\+Inf)$")


def scrape(port: int) -> dict[str, float]:
    reply = call(port, "GET", "/metrics", timeout=5)
    assert reply.status == 200, reply.body
    assert reply.headers["Content-Type"].startswith("text/plain"), reply.headers["Content-Type"]
    values = {}
    for line in reply.body.decode().splitlines():
        match = _SAMPLE.match(line)
        if match:
            values[match.group(1)] = float(match.group(2))
    return values


def requests_key(route: str, status: int) -> str:
    return f'neuro_san_gateway_http_requests_total{{route="{route}",status="{status}"}}'


def seconds_count_key(route: str) -> str:
    return f'neuro_san_gateway_http_request_seconds_count{{route="{route}"}}'


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("metrics-markers")


@pytest.fixture(scope="module")
def served(markers: Path) -> Iterator[ServerProcess]:
    env = {"GATEWAY_TEST_MARKER_DIR": str(markers)}
    with start_server(http=True, env=env, extra_args=PROBE_ARGS) as server:
        yield server


def test_serve_shows_server_and_gateway_metrics_that_move(served: ServerProcess) -> None:
    port = served.http_port
    before = scrape(port)
    assert chat(port, "echo", "counted").lines()[-1]["response"]["text"] == "counted"
    assert chat(port, "echo", "counted again").status == 200
    assert call(port, "GET", "/api/v1/echo/function").status == 200
    assert call(port, "GET", "/api/v1/no_such_agent_xyz/function").status == 404
    assert call(port, "GET", "/nowhere/at/all").status == 404
    assert call(port, "DELETE", "/api/v1/list").status == 405
    assert call(port, "GET", "/readyz").status == 200
    after = scrape(port)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    # The gateway's own HTTP metrics, labelled by method name, never by path.
    assert delta(requests_key("StreamingChat", 200)) == 2
    assert delta(seconds_count_key("StreamingChat")) == 2
    assert delta(requests_key("Function", 200)) == 1
    assert delta(requests_key("Function", 404)) == 1
    assert delta(requests_key("unmatched", 404)) == 1
    assert delta(requests_key("unmatched", 405)) == 1
    assert delta(requests_key("readyz", 200)) == 1
    assert delta('neuro_san_gateway_http_request_seconds_sum{route="StreamingChat"}') > 0
    # The scrape before this one was counted too.
    assert delta(requests_key("metrics", 200)) == 1
    # The gRPC server's metrics, in the same process, on the same page.
    assert delta('neuro_san_requests_total{agent="echo",code="OK",method="StreamingChat"}') == 2
    text = call(port, "GET", "/metrics").body.decode()
    assert "no_such_agent_xyz" not in text and "nowhere" not in text


def test_a_client_that_goes_away_is_counted_as_499(served: ServerProcess, markers: Path) -> None:
    port = served.http_port
    before = scrape(port).get(requests_key("StreamingChat", 499), 0.0)
    connection, lines = open_stream(
        port, "probe", {"user_message": {"text": "slow:metrics"}, "chat_filter": {"chat_filter_type": "MAXIMAL"}}
    )
    next(lines)
    assert wait_for(lambda: (markers / "started-metrics").exists())
    connection.close()
    assert wait_for(lambda: scrape(port).get(requests_key("StreamingChat", 499), 0.0) == before + 1)


def test_standalone_gateway_shows_its_own_metrics() -> None:
    with start_server() as upstream:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", upstream.grpc_target,
             "--port", str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        )
        try:
            assert wait_for(lambda: _answers(port), timeout=15)
            assert call(port, "GET", "/api/v1/list").status == 200
            values = scrape(port)
            assert values[requests_key("List", 200)] == 1
            # The server's metrics live in the server's process, not here.
            assert not any(name.startswith("neuro_san_requests_total") for name in values)
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0


def _answers(port: int) -> bool:
    try:
        return call(port, "GET", "/livez", timeout=2).status == 200
    except OSError:
        return False
