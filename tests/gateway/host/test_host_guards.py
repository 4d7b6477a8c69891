"""The host's guards hold on every route of every front-end, by construction.

The routes come from the host's own table, built by the composition root exactly as
``neuro-san serve`` builds it, so a front-end added later is covered without a new test:
every route that takes a body gets 408 (and a close) when its body stalls, and every
front-end's connection is closed by the header deadline when its request line stalls.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest

from gateway.composition import protocol_frontends
from gateway.host.app import Host
from gateway.host.config import GatewayConfig
from gateway.host.frontends import FrontEndRoute
from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from gateway.transcoder.frontend import default_services, rest_frontend
from tests.support.servers import ServerProcess, closed_by_server, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

DEADLINE_SECONDS = 1.0
#: What any guarded answer may take beyond its deadline on a loaded 2-core machine.
MARGIN_SECONDS = 5.0


def _host_routes() -> list[FrontEndRoute]:
    """The route table of a host composed as ``serve`` composes it (MCP on, playground on)."""
    services = default_services()
    # An in-process invoker with no handlers: the table needs callables, none is called.
    invoker = InProcessInvoker([], health=None, max_message_bytes=1 << 20)  # type: ignore[arg-type]
    frontends = [rest_frontend(services), *protocol_frontends(playground=True, env={"AGENT_MCP_ENABLE": "true"})]
    return Host(invoker, GatewayConfig(), methods_of(services), frontends).routes()


ROUTES = _host_routes()
BODY_ROUTES = [route for route in ROUTES if route.reads_body]


def _concrete(template: str) -> str:
    """A request path for a template: every variable becomes an existing network's name."""
    return re.sub(r"\{[^}]*\}", "math_guy", template.split(":")[0])


@pytest.fixture(scope="module")
def guarded() -> Iterator[ServerProcess]:
    env = {
        "AGENT_HTTP_BODY_READ_TIMEOUT_SECONDS": str(DEADLINE_SECONDS),
        "AGENT_HTTP_HEADER_TIMEOUT_SECONDS": str(DEADLINE_SECONDS),
        "AGENT_MCP_ENABLE": "true",
        # The raw requests below name the host "x": listed, so the body guard answers, not the Host one.
        "AGENT_HTTP_ALLOWED_HOSTS": "x",
    }
    with start_server(env=env, http=True) as server:
        yield server




def test_the_table_has_the_body_routes_of_every_front_end() -> None:
    """Guards against a vacuous parametrisation: REST, MCP and A2A all take bodies."""
    templates = {route.template for route in BODY_ROUTES}
    assert "/mcp" in templates and "/a2a/{agent}" in templates
    assert any(template.startswith("/api/v1/") for template in templates)


@pytest.mark.parametrize("route", BODY_ROUTES, ids=lambda r: f"{r.http_method} {r.template}")
def test_a_stalled_body_is_answered_408_within_the_deadline(guarded: ServerProcess, route: FrontEndRoute) -> None:
    with socket.create_connection(("127.0.0.1", guarded.http_port), timeout=10) as sock:
        sock.sendall(
            f"{route.http_method} {_concrete(route.template)} HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\": ".encode()
        )
        sock.settimeout(DEADLINE_SECONDS + MARGIN_SECONDS)
        reply = sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert closed_by_server(sock, MARGIN_SECONDS)


def _one_path_per_front_end() -> list[str]:
    """A path of each front-end (REST, MCP, A2A, playground), as their first route has it."""
    firsts: dict[str, str] = {}
    for route in ROUTES:
        room = "rest" if route.template.startswith("/api/") else route.template.strip("/").split("/")[0]
        firsts.setdefault(room, _concrete(route.template))
    return sorted(firsts.values())


@pytest.mark.parametrize("path", _one_path_per_front_end())
def test_a_half_sent_request_line_is_closed_by_the_header_deadline(guarded: ServerProcess, path: str) -> None:
    with socket.create_connection(("127.0.0.1", guarded.http_port), timeout=10) as sock:
        sock.sendall(f"POST {path} HTT".encode())
        assert closed_by_server(sock, DEADLINE_SECONDS + MARGIN_SECONDS)
