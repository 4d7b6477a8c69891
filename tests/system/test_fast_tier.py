"""The fast tier's guard (tests/support/fast_tier.py): what it takes for a server, and that
a test outside the slow tier really cannot start one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.fast_tier import GUARD, StartsAServer, server_started_by


@pytest.mark.parametrize(("argv", "started"), [
    ([sys.executable, "-m", "neuro_san.cli.main", "serve", "--port", "1"], "neuro-san serve"),
    (["/venv/bin/neuro-san", "serve"], "neuro-san serve"),
    (["redis-server", "--port", "1"], "redis-server"),
    (["/usr/bin/chromium", "--headless"], "chromium"),
    (["node", "client.js"], "node"),
    ([sys.executable, "-m", "tests.fakes.fake_llm", "--port", "0"], "tests.fakes.fake_llm"),
])
def test_servers_and_services_are_named(argv: list[str], started: str) -> None:
    assert server_started_by(argv) == started


@pytest.mark.parametrize("argv", [
    [sys.executable, "-c", "import neuro_san"],
    [sys.executable, "-m", "neuro_san.cli.main", "chat", "echo", "hi"],
    [sys.executable, "deploy/healthcheck.py"],
    [],
])
def test_one_shot_processes_are_allowed(argv: list[str]) -> None:
    assert server_started_by(argv) is None


def test_a_fast_test_that_starts_a_service_fails_naming_itself() -> None:
    # Refused before anything is executed: no redis-server is needed for this to fail.
    named = "test_a_fast_test_that_starts_a_service_fails_naming_itself starts redis-server"
    with pytest.raises(StartsAServer, match=named):
        subprocess.Popen(["redis-server", "--port", "0"])


def test_a_fast_test_may_run_a_one_shot_interpreter() -> None:
    done = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "42"


@pytest.mark.slow
def test_a_slow_test_is_not_guarded() -> None:
    assert GUARD.current is None
