"""S10: the protocol front-ends against REST, the same echo chat on the same server in the
same run (16 clients, CPU per call from /proc). Each row says what the front-end costs
beyond REST's chat: its ratio to REST's CPU per call (issue 37's targets: MCP <= 1.2x,
the OpenAI API and AG-UI <= 1.3x; A2A is held to the SDK's own server, not to REST).
A front-end this server does not serve (404 on its path) is reported as absent.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

from bench import procs
from bench.run import Settings, closed_spec, repeat

#: The front-ends S10 measures, and a path a GET of which tells whether the server serves it
#: (anything but 404: a POST-only route answers 405).
FRONTENDS = {"mcp": "/mcp", "a2a": "/a2a/echo/.well-known/agent-card.json", "openai": "/v1/models",
             "agui": "/ag-ui/echo"}


def _served(base: str, probe: str) -> bool:
    try:
        with urllib.request.urlopen(base + probe, timeout=10):  # noqa: S310 - loopback
            return True
    except urllib.error.HTTPError as error:
        return error.code != 404
    except (urllib.error.URLError, OSError):
        return False


def run_s10(s: Settings, fast: bool) -> dict[str, Any]:
    fake, fake_port = procs.start_fake(0.0, fast)
    result: dict[str, Any] = {}
    try:
        server = procs.start_server(fake_port, fast)
        pid = server.proc.pid
        try:
            rest = closed_spec("http", server.http_base, "echo", s.clients, s.load_seconds, s, fast)
            result["rest"] = repeat(s.runs, lambda: procs.run_load(rest, pid, fake_pid=fake.pid))
            for name, probe in FRONTENDS.items():
                if not _served(server.http_base, probe):
                    result[name] = {"absent": True}
                    continue
                spec = closed_spec(name, server.http_base, "echo", s.clients, s.load_seconds, s, fast)
                measured = repeat(s.runs, lambda: procs.run_load(spec, pid, fake_pid=fake.pid))  # noqa: B023
                rest_cpu = result["rest"]["cpu_ms_per_chat"]
                measured["cpu_to_rest"] = measured["cpu_ms_per_chat"] / rest_cpu if rest_cpu else 0.0
                result[name] = measured
        finally:
            server.proc.stop()
    finally:
        fake.stop()
    return result
