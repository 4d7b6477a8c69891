"""neuro-san's own HTTP client (0.7.x) against our gateway.

It needs Python 3.12 and the neuro-san package, which are not ours to install in the
suite's virtualenv, so the test runs only when NEURO_SAN_UPSTREAM_PYTHON names a python
that has neuro-san installed, e.g.::

    python3.12 -m venv /tmp/upstream && /tmp/upstream/bin/pip install neuro-san==0.7.15
    NEURO_SAN_UPSTREAM_PYTHON=/tmp/upstream/bin/python make test-fast
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.servers import start_server

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")

pytestmark = pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to run neuro-san's own client")


def _agent_cli(port: int, *args: str, cwd: Path) -> str:
    command = [UPSTREAM, "-m", "neuro_san.client.agent_cli", "--http", "--host", "127.0.0.1", "--port", str(port)]
    # Run outside the repository, or `-m neuro_san…` would find our package, not theirs.
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


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
