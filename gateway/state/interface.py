"""The shared state's interface and settings (see :mod:`gateway.state` for what it is for).

Kept apart from the package's factory so that the implementations (``memory``,
``redis_state``) import this module and the factory imports them, without a circle.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from neuro_san.core.env_settings import env_number
from neuro_san.settings import process_env

#: The environment variable naming the Redis of the shared front-end state.
REDIS_URL_ENV = "AGENT_REDIS_URL"
#: How long a replica's lease lasts without a heartbeat: the bound on how long the tasks
#: of a replica that died stay ``working`` before another replica fails them.
LEASE_ENV = "AGENT_REPLICA_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS = 15.0

#: What a cancellation names: the protocol (``a2a``, ``mcp``) and the chat's key in it.
ChatKind = str
CancelCallback = Callable[[], object]


class StateUnavailable(RuntimeError):
    """The shared state's engine cannot be reached; the request that needs it cannot be
    served now (the front-end answers 503 or a JSON-RPC error saying so)."""


class SharedState(ABC):
    """What the front-ends keep between requests, the same for every replica that shares it."""

    #: True when the state is shared between replicas (Redis), False for this process only.
    shared: bool = False
    #: This process's name in the shared state (leases, logs).
    replica_id: str = ""

    # ---- conversations: small JSON documents that expire -------------------------------

    @abstractmethod
    async def get_json(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The document stored under ``key``, or None (never stored, or expired)."""

    @abstractmethod
    async def put_json(self, namespace: str, key: str, value: dict[str, Any], ttl_seconds: float) -> None:
        """Store ``value`` under ``key`` for ``ttl_seconds`` (the oldest may be evicted first)."""

    # ---- chats in flight and their cancellation ----------------------------------------

    @abstractmethod
    def register_chat(self, kind: ChatKind, key: str, cancel: CancelCallback) -> Callable[[], None]:
        """Note that this process runs ``key``; ``cancel`` stops it. Returns the function
        that removes the entry (call it when the chat ends)."""

    @abstractmethod
    async def cancel_chat(self, kind: ChatKind, key: str) -> bool:
        """Stop the chat ``key`` wherever it runs. True if it ran here; when it does not and
        the state is shared, every replica is told (the one running it stops it)."""

    # ---- availability -----------------------------------------------------------------

    def start(self) -> None:
        """Start background work (listeners, heartbeats); called inside the event loop."""
        return None

    async def available(self) -> bool:
        """Whether the shared engine answers (a quick check only after an outage)."""
        return True

    async def close(self) -> None:
        """Release connections and background tasks."""
        return None


def _seconds(env: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    """A number of seconds within [low, high]; read by the core's one env-number reader."""
    value = env_number(env, name, float)
    if value is None:
        return default
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low:g} and {high:g} seconds, not {env[name].strip()!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class StateSettings:
    """The shared state's configuration, read (and checked) once at start."""

    redis_url: str = ""
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    #: How long an A2A task (and its events) is kept after its last update.
    task_ttl_seconds: float = 24 * 3600.0
    #: How long a contextId's chat_context is kept after its last answer.
    context_ttl_seconds: float = 3600.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StateSettings:
        """Raises ValueError naming the variable when a value is wrong (refused at start)."""
        env = process_env() if env is None else env
        url = env.get(REDIS_URL_ENV, "").strip()
        if url and urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"{REDIS_URL_ENV} must be a redis://, rediss:// or unix:// URL, not {url!r}")
        if url and importlib.util.find_spec("redis") is None:
            raise ValueError(f"{REDIS_URL_ENV} needs the redis package: pip install 'neuro-san-grpc[redis]'")
        return cls(
            redis_url=url,
            lease_seconds=_seconds(env, LEASE_ENV, DEFAULT_LEASE_SECONDS, 1, 3600),
            task_ttl_seconds=_seconds(env, "AGENT_A2A_TASK_TTL_SECONDS", 24 * 3600.0, 60, 366 * 86400),
            context_ttl_seconds=_seconds(env, "AGENT_A2A_CONTEXT_TTL_SECONDS", 3600.0, 1, 366 * 86400),
        )
