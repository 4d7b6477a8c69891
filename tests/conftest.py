"""Shared fixtures. Async tests are plain functions that call ``asyncio.run``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.fake_llm import RECEIVED_BODIES
from tests.support.cluster import RedisProcess
from tests.support.fake_thread import Rig, fake_backed_server
from tests.support.fast_tier import GUARD
from tests.support.load import UNEXPECTED
from tests.support.runtime import SLY_MARKER
from tests.support.servers import ServerProcess, start_server

if TYPE_CHECKING:
    from tests.support.oauth import Rig as OAuthRig


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


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    """The bundled example networks over gRPC and HTTP, one server per module (front-ends
    keep state, A2A tasks and MCP sessions, that a module may count). A module needing
    other settings writes its own fixture under another name."""
    with start_server(http=True) as running:
        yield running


@pytest.fixture(scope="module")
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    """A server (gRPC and HTTP) whose networks all talk to a fake LLM in this process, one
    per module; a module's ``RIG_LLM_CONFIG`` dict adds to the override (``max_attempts``,
    ``request_timeout``). Whatever the module tested, no call may have ended in the
    server's message for an exception it did not expect: that is a bug."""
    extras: dict[str, Any] = getattr(request.module, "RIG_LLM_CONFIG", {})
    with fake_backed_server(**extras) as running:
        yield running
        log = running.server.log()
        assert UNEXPECTED.split(";")[0] not in log, log[-6000:]


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


@pytest.fixture(scope="module")
def oauth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthRig]:
    """A real authorization server (oidc-provider on node) and a server trusting its tokens,
    one pair per module (the OAuth modules skip themselves where either tool is missing)."""
    from tests.support.oauth import oauth_rig  # jwt and cryptography: only for the OAuth modules

    with oauth_rig(tmp_path_factory.mktemp("oauth")) as made:
        yield made
