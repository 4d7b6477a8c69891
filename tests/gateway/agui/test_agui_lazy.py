"""The AG-UI front-end is in the host's table from the start, but its protocol package
(``ag-ui-protocol``: pydantic models) loads on the first request, not at start-up."""

from __future__ import annotations

import json
import subprocess
import sys

from gateway.agui import AGUI_ROUTES
from gateway.composition import protocol_frontends
from gateway.host.app import Host
from gateway.host.config import GatewayConfig
from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from gateway.transcoder.frontend import default_services, rest_frontend
from tests.support.servers import ROOT

_STARTUP = """
import json, sys
import neuro_san.cli.serve, gateway.composition
factories = gateway.composition.protocol_frontends(playground=True, env={})
print(json.dumps({"loaded": [m for m in ("ag_ui", "gateway.agui.frontend") if m in sys.modules]}))
"""


def test_start_up_does_not_import_the_protocol_package() -> None:
    done = subprocess.run([sys.executable, "-c", _STARTUP], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"loaded": []}


def test_the_route_is_in_the_hosts_table_with_its_refusal() -> None:
    services = default_services()
    invoker = InProcessInvoker([], health=None, max_message_bytes=1 << 20)  # type: ignore[arg-type]
    frontends = [rest_frontend(services), *protocol_frontends(playground=True, env={})]
    routes = Host(invoker, GatewayConfig(), methods_of(services), frontends).routes()
    [route] = [r for r in routes if r.template == "/ag-ui/{agent}"]
    [spec] = AGUI_ROUTES
    assert (route.http_method, route.refusal, route.reads_body, route.drains) == ("POST", spec.refusal, True, True)
    off = protocol_frontends(playground=True, env={"AGENT_AGUI_ENABLE": "false"})
    off_routes = Host(invoker, GatewayConfig(), methods_of(services), [rest_frontend(services), *off]).routes()
    assert not [r for r in off_routes if r.template.startswith("/ag-ui/")]
