"""The studio tests compose as ``neuro-san serve`` does: studio's classes plugged in."""

from __future__ import annotations

import pytest

from neuro_san.studio import plugin


@pytest.fixture(autouse=True, scope="session")
def studio_registered() -> None:
    # Process-wide, as in the server: registered once, never removed (the test that needs
    # a process without them removes them and puts them back itself).
    plugin.register()
