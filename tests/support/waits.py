"""Waiting for an event instead of sleeping for it.

A test that sleeps "long enough" for something to happen is slow when the machine is idle
and flaky when it is loaded. These helpers wait for the thing itself: a condition polled
until a deadline (the deadline only bounds a hang; it is never what the test measures), a
line in a server's log, a port that accepts connections. Each returns whether the event
happened, so the caller asserts with its own message. Where the event is in this process,
prefer an ``asyncio.Event`` or ``threading.Event`` set by whoever causes it.

A sleep that is the behaviour under test (a slow client, a paced fake LLM, a TTL or lease
that must elapse, "nothing more arrives for a while") stays a sleep, with a comment saying so.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

#: How often a condition is looked at: short against the events waited for, long enough
#: not to starve the code under test of the 2 cores it shares.
STEP = 0.05


def wait_until(condition: Callable[[], object], within: float = 15.0, step: float = STEP) -> bool:
    """Poll ``condition`` until it is true or ``within`` seconds pass; whether it became true."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return bool(condition())
        time.sleep(step)
    return True


async def until(
    condition: Callable[[], object | Awaitable[object]], within: float = 15.0, step: float = STEP
) -> bool:
    """``wait_until`` for a coroutine: ``condition`` may be async (a read from a store) or a
    plain function (a counter another thread moves)."""

    async def holds() -> bool:
        value = condition()
        return bool(await value if inspect.isawaitable(value) else value)

    deadline = time.monotonic() + within
    while not await holds():
        if time.monotonic() >= deadline:
            return await holds()
        await asyncio.sleep(step)
    return True


class HasLog(Protocol):
    def log(self) -> str: ...


def wait_for_log(server: HasLog, text: str, within: float = 10.0, count: int = 1) -> bool:
    """Until ``server``'s log holds ``text`` (``count`` times): its output is read by another
    thread, so a line the server wrote is not at once in ``log()``."""
    return wait_until(lambda: server.log().count(text) >= count, within)


def wait_for_port(port: int, within: float = 10.0, host: str = "127.0.0.1") -> bool:
    """Until something accepts connections on ``host:port``."""

    def accepts() -> bool:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return True
        except OSError:
            return False

    return wait_until(accepts, within)
