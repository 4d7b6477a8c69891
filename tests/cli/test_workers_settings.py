"""``serve --workers N`` refuses a bad setting in the parent, before forking any worker:
one clear line and exit code 2, as a single server does, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import ROOT, free_port

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("setting", "said"), [
    ("AGENT_RATE_LIMIT_CHATS=abc", "AGENT_RATE_LIMIT_CHATS='abc' is not a number"),
    ("AGENT_TOKEN_BUDGET_PER_HOUR=-5", "AGENT_TOKEN_BUDGET_PER_HOUR='-5' must not be negative"),
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


def _refusal(env: dict[str, str]) -> str:
    """``serve --workers 2`` under ``env`` (nothing else of the caller's A2A/Redis/limits
    settings): it must refuse with one line and exit 2; the line."""
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--workers", "2", "--host", "127.0.0.1",
            "--port", str(free_port()), "--http-port", str(free_port())]
    ours = ("AGENT_A2A", "AGENT_OPENAI", "AGENT_REDIS", "AGENT_RATE_LIMIT", "AGENT_TOKEN_BUDGET", "AGENT_LIMITS",
            "AGENT_API")
    base = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**base, "PYTHONUNBUFFERED": "1", **env})
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output and "not starting: " in output, output
    assert len(output.strip().splitlines()) == 1, output  # no worker was started
    return output


def test_workers_without_redis_refuse_a2a_whose_tasks_would_be_each_workers_own() -> None:
    said = _refusal({})
    assert "--workers 2: A2A's tasks" in said and "AGENT_REDIS_URL" in said and "AGENT_A2A_ENABLE=false" in said, said


def test_workers_without_redis_refuse_openai_responses_that_would_be_each_workers_own() -> None:
    said = _refusal({"AGENT_A2A_ENABLE": "false"})
    assert "OpenAI API's stored responses" in said and "AGENT_OPENAI_ENABLE=false" in said and "A2A" not in said, said


@pytest.mark.parametrize("limit", ["AGENT_RATE_LIMIT_CHATS=5", "AGENT_RATE_LIMIT_CONCURRENT_CHATS=1",
                                   "AGENT_TOKEN_BUDGET_PER_DAY=1000"])
def test_workers_without_redis_refuse_per_caller_limits_that_would_count_per_worker(limit: str) -> None:
    name, _, value = limit.partition("=")
    said = _refusal({"AGENT_A2A_ENABLE": "false", "AGENT_OPENAI_ENABLE": "false", name: value})
    assert "per-caller limits" in said and "AGENT_LIMITS_REDIS_URL" in said and "A2A" not in said, said


def test_workers_without_redis_refuse_a_keys_files_own_limits(tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text("keys:\n  - name: team\n    key: s3cret-team-key\n    limits: {chats: 10}\n")
    said = _refusal({"AGENT_A2A_ENABLE": "false", "AGENT_OPENAI_ENABLE": "false", "AGENT_API_KEYS_FILE": str(keys)})
    assert "per-caller limits" in said, said


def test_a2a_switch_refuses_what_is_not_a_switch() -> None:
    """The parent checks the switch before forking (one grammar: true/false, 1/0, yes/no, on/off)."""
    said = _refusal({"AGENT_A2A_ENABLE": "maybe"})
    assert "AGENT_A2A_ENABLE='maybe' is not a switch" in said, said
