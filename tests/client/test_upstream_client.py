"""neuro-san's own clients against our server: 0.7.x over HTTP (the gateway) and
0.5.68, the last release with a gRPC client, over gRPC (the per-agent route).

They need their own virtualenvs, which are not ours to install in the suite's, so each
test runs only when its variable names a python that has that neuro-san installed::

    python3.12 -m venv /tmp/ns07 && /tmp/ns07/bin/pip install neuro-san==0.7.15
    python3.11 -m venv /tmp/ns05 && /tmp/ns05/bin/pip install neuro-san==0.5.68 leaf-common==1.2.33 \
        leaf-server-common==0.1.23 langchain-mcp-adapters==0.1.11 mcp==1.19.0 pydantic==2.11.9
    NEURO_SAN_UPSTREAM_PYTHON=/tmp/ns07/bin/python NEURO_SAN_05_PYTHON=/tmp/ns05/bin/python make test-fast
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.servers import start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")
UPSTREAM_05 = os.environ.get("NEURO_SAN_05_PYTHON", "")


def _agent_cli(port: int, *args: str, cwd: Path, python: str = UPSTREAM, transport: str = "--http") -> str:
    command = [python, "-m", "neuro_san.client.agent_cli", transport, "--host", "127.0.0.1", "--port", str(port)]
    # Run outside the repository, or `-m neuro_san…` would find our package, not theirs.
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to run neuro-san 0.7's own client")
def test_agent_cli_over_http(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("6 * 7")
    with start_server(http=True) as server:
        port = server.http_port
        answer = _agent_cli(port, "--agent", "math_guy", "--first_prompt_file", str(prompt), "--one_shot", cwd=tmp_path)
        listing = _agent_cli(port, "--list", cwd=tmp_path)
        connectivity = _agent_cli(port, "--agent", "deep/math_guy", "--connectivity", cwd=tmp_path)
    assert "The answer is 42." in answer and '"equals": 42' in answer
    assert "hello_world" in listing
    assert "calculator" in connectivity


@pytest.mark.skipif(not UPSTREAM_05, reason="set NEURO_SAN_05_PYTHON to run neuro-san 0.5.68's gRPC client")
def test_agent_cli_05_over_grpc(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("6 * 7")
    options = {"cwd": tmp_path, "python": UPSTREAM_05, "transport": "--grpc"}
    with start_server() as server:
        port = server.grpc_port
        answer = _agent_cli(port, "--agent", "math_guy", "--first_prompt_file", str(prompt), "--one_shot", **options)
        listing = _agent_cli(port, "--list", **options)
        connectivity = _agent_cli(port, "--agent", "hello_world", "--connectivity", **options)
    assert "The answer is 42." in answer and '"equals": 42' in answer
    assert "math_guy_passthrough" in listing
    assert "synonymizer" in connectivity
