"""Shared fixtures. Async tests are plain functions that call ``asyncio.run``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_llm import RECEIVED_BODIES
from tests.support.runtime import SLY_MARKER
from tests.support.servers import ServerProcess, start_server


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
