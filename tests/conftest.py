"""Shared fixtures. Async tests are plain functions that call ``asyncio.run``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servers import ServerProcess, start_server


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """The bundled example networks, served over gRPC only, for the whole session."""
    with start_server() as running:
        yield running
