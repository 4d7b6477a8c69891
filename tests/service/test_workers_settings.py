"""``serve --workers N`` refuses a bad setting in the parent, before forking any worker:
one clear line and exit code 2, as a single server does, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.servers import ROOT, free_port


@pytest.mark.parametrize(("setting", "said"), [
    ("AGENT_RATE_LIMIT_CHATS=abc", "limit 'chats' must be a number, not 'abc'"),
    ("AGENT_TOKEN_BUDGET_PER_HOUR=-5", "tokens_per_hour"),
    ("AGENT_HTTP_MAX_CONNECTIONS=lots", "AGENT_HTTP_MAX_CONNECTIONS='lots' is not a number"),
    ("AGENT_GRPC_KEEPALIVE_SECONDS=-1", "AGENT_GRPC_KEEPALIVE_SECONDS='-1' must not be negative"),
    ("AGENT_MAX_CONCURRENT_REQUESTS=many", "AGENT_MAX_CONCURRENT_REQUESTS='many' is not a number"),
    ("AGENT_EVENT_LOOP=trio", "AGENT_EVENT_LOOP must be one of auto, uvloop, asyncio, not 'trio'"),
])  # fmt: skip
def test_workers_refuse_a_bad_limit_setting_with_one_line_and_exit_2(setting: str, said: str) -> None:
    name, _, value = setting.partition("=")
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--workers", "2", "--host", "127.0.0.1",
            "--port", str(free_port()), "--http-port", str(free_port())]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONUNBUFFERED": "1", name: value})
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert said in output and "not starting" in output, output
    assert "Traceback" not in output and "worker" not in output.lower(), output  # no worker was started
    assert len(output.strip().splitlines()) == 1, output
