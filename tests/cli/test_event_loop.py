"""``AGENT_EVENT_LOOP`` (neuro_san/cli/event_loop.py): which loop ``serve`` runs on."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from neuro_san.cli.event_loop import loop_runner


def test_auto_is_uvloop_when_installed_and_asyncio_can_be_forced() -> None:
    uvloop = pytest.importorskip("uvloop")
    assert loop_runner({}) is uvloop.run
    assert loop_runner({"AGENT_EVENT_LOOP": "auto"}) is uvloop.run
    assert loop_runner({"AGENT_EVENT_LOOP": " UVLOOP "}) is uvloop.run
    assert loop_runner({"AGENT_EVENT_LOOP": "asyncio"}) is asyncio.run


def test_without_uvloop_auto_falls_back_and_uvloop_is_refused(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if the fast extra were not installed
    assert loop_runner({}) is asyncio.run
    with pytest.raises(ValueError, match=r"AGENT_EVENT_LOOP=uvloop, but uvloop is not installed"):
        loop_runner({"AGENT_EVENT_LOOP": "uvloop"})


def test_an_unknown_loop_is_refused() -> None:
    with pytest.raises(ValueError, match="must be one of auto, uvloop, asyncio, not 'trio'"):
        loop_runner({"AGENT_EVENT_LOOP": "trio"})
