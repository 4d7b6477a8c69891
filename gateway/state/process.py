"""Where this process's shared state lives: memory, or Redis with ``AGENT_REDIS_URL``."""

from __future__ import annotations

import asyncio
import contextlib

from gateway.state.interface import SharedState, StateSettings


def make_state(settings: StateSettings | None = None) -> SharedState:
    """The state the settings ask for: Redis with ``AGENT_REDIS_URL``, else memory."""
    settings = settings or StateSettings.from_env()
    if not settings.redis_url:
        from gateway.state.memory import MemoryState

        return MemoryState()
    from gateway.state.redis_state import RedisState  # imports redis: only when configured

    return RedisState(settings.redis_url, lease_seconds=settings.lease_seconds)


class _Holder:
    """The process's one state and how many front-ends hold it."""

    state: SharedState | None = None
    holders = 0


def process_state() -> SharedState:
    """This process's shared state, made on first use; each caller calls :func:`release_state`
    when it closes (the last one closes the connections)."""
    if _Holder.state is None:
        _Holder.state = make_state()
    _Holder.holders += 1
    with contextlib.suppress(RuntimeError):  # no running loop: started on first use instead
        asyncio.get_running_loop()
        _Holder.state.start()
    return _Holder.state


async def release_state() -> None:
    _Holder.holders -= 1
    if _Holder.holders <= 0 and _Holder.state is not None:
        state, _Holder.state, _Holder.holders = _Holder.state, None, 0
        await state.close()
