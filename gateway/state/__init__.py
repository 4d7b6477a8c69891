"""Front-end state that must be the same on every replica: the interface, and where it lives.

The REST and gRPC APIs keep nothing between calls (the client carries ``chat_context``).
The protocol front-ends do keep a little: A2A's tasks and their events, A2A's
``contextId`` → chat_context memory, and the index of chats in flight that a cancellation
(A2A ``tasks/cancel``, MCP ``notifications/cancelled``) must find. Behind a load balancer
without sticky sessions the request that needs that state may reach any replica, so it
lives in one engine every replica reaches:

- ``AGENT_REDIS_URL`` set: Redis (:mod:`gateway.state.redis_state`): conversations and
  tasks are bounded and expire, updates are atomic (Lua scripts), cancellations and task
  events cross replicas (pub/sub, streams), and each replica holds a lease so that the
  tasks of one that died end ``failed``. The A2A task store and event stream on it are in
  :mod:`gateway.a2a.redis_tasks` (the a2a-sdk's cluster interfaces).
- unset: this process's memory (:mod:`gateway.state.memory`), per replica, as before.

When Redis cannot be reached the state answers :class:`StateUnavailable` quickly (short
socket timeouts), a WARNING is logged once, and the front-ends turn it into a clear error
(HTTP 503 / a JSON-RPC error) for the requests that need the shared state; chats that do
not (REST, gRPC, MCP tools, local cancellations) go on. The first successful call after
the outage logs that Redis is back.

``AGENT_LIMITS_REDIS_URL`` (rate limits and token budgets) is separate and keeps working:
when only ``AGENT_REDIS_URL`` is set, the limits use it too (one engine by default).

One :class:`SharedState` is made per process (:func:`process_state`) and shared by the
front-ends that use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit, urlunsplit

from gateway.state.interface import (
    DEFAULT_LEASE_SECONDS,
    LEASE_ENV,
    REDIS_URL_ENV,
    CancelCallback,
    ChatKind,
    SharedState,
    StateSettings,
    StateUnavailable,
)
from neuro_san.core.errors import redis_missing_message

log = logging.getLogger(__name__)


def make_state(settings: StateSettings | None = None) -> SharedState:
    """The state the settings ask for: Redis with ``AGENT_REDIS_URL``, else memory."""
    settings = settings or StateSettings.from_env()
    if not settings.redis_url:
        from gateway.state.memory import MemoryState

        return MemoryState()
    try:
        from gateway.state.redis_state import RedisState  # imports redis: only when configured
    except ModuleNotFoundError as missing:
        if missing.name != "redis":
            raise
        # A setting the install cannot honour: refused at start with the extra to install.
        raise ValueError(redis_missing_message("AGENT_REDIS_URL")) from None
    return RedisState(settings.redis_url, lease_seconds=settings.lease_seconds)


async def warn_when_unreachable(settings: StateSettings | None = None) -> bool:
    """At start-up: one WARNING line when ``AGENT_REDIS_URL`` does not answer (False). The
    server still starts: the shared state is lazy and recovers by itself when Redis comes
    back (the outage tests count on it); until then what needs it answers "unavailable"."""
    settings = settings or StateSettings.from_env()
    if not settings.redis_url:
        return True
    try:
        from gateway.state.redis_state import ping  # imports redis: only when configured
    except ModuleNotFoundError:
        return True  # refused with the extra to install where the state is made
    problem = await ping(settings.redis_url)
    if problem is None:
        return True
    log.warning("AGENT_REDIS_URL %s does not answer at start (%s): A2A tasks, contextIds and cancellations "
                "across replicas, and limits kept in Redis, fail until it does", _without_password(settings.redis_url),
                problem)
    return False


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


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


__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "LEASE_ENV",
    "REDIS_URL_ENV",
    "CancelCallback",
    "ChatKind",
    "SharedState",
    "StateSettings",
    "StateUnavailable",
    "make_state",
    "warn_when_unreachable",
    "process_state",
    "release_state",
]
