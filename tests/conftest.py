"""Shared fixtures. Async tests are plain functions that call ``asyncio.run``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_llm import RECEIVED_BODIES
from tests.support.cluster import RedisProcess
from tests.support.fast_tier import GUARD
from tests.support.runtime import SLY_MARKER
from tests.support.servers import ServerProcess, start_server


def pytest_configure(config: pytest.Config) -> None:
    GUARD.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    GUARD.uninstall()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test outside the slow tier (its fixtures' set-up included) may start no server
    process and no service: tests/support/fast_tier.py refuses them, naming the test."""
    GUARD.current = None if item.get_closest_marker("slow") else item.nodeid
    try:
        yield
    finally:
        GUARD.current = None


@pytest.fixture(scope="session", autouse=True)
def sly_data_never_reaches_an_llm() -> Iterator[None]:
    """The audit: across the whole suite, no request body received by any fake LLM holds
    a sly_data value (every test's sly_data values carry SLY_MARKER)."""
    yield
    leaks = [body[:200] for body in RECEIVED_BODIES if SLY_MARKER.encode() in body]
    assert not leaks, f"sly_data reached an LLM in {len(leaks)} request(s): {leaks[:3]}"


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """The bundled example networks, served over gRPC only, for the whole session."""
    with start_server() as running:
        yield running


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A throw-away redis-server (no persistence) for one test, which may stop and start it;
    the test is skipped where redis-server is not installed (``make test`` installs it)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make test installs it)")
    process = RedisProcess(tmp_path)
    process.start()
    try:
        yield process
    finally:
        process.stop()
