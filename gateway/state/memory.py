"""The shared state in this process's memory: per replica (no ``AGENT_REDIS_URL``).

Documents are bounded (least recently used evicted first) and expire; cancellations reach
only the chats this process runs. Behind a load balancer, a request that needs what
another replica holds (a contextId it remembers, a chat it runs) does not find it: that is
what ``AGENT_REDIS_URL`` is for.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from gateway.state.interface import CancelCallback, ChatKind, SharedState

DEFAULT_MAX_ENTRIES = 10_000


class LruDocuments:
    """key → (document, expiry); least recently used evicted first beyond ``max_entries``."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[dict[str, Any], float]] = OrderedDict()

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, value: dict[str, Any], ttl_seconds: float) -> None:
        if not key or self._max <= 0:
            return
        self._entries[key] = (value, self._clock() + ttl_seconds)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class LocalChats:
    """The chats this process runs, by kind and key, with the callback that stops each."""

    def __init__(self) -> None:
        self._running: dict[tuple[ChatKind, str], CancelCallback] = {}

    def register(self, kind: ChatKind, key: str, cancel: CancelCallback) -> Callable[[], None]:
        entry = (kind, key)
        self._running[entry] = cancel

        def unregister() -> None:
            if self._running.get(entry) is cancel:
                del self._running[entry]

        return unregister

    def cancel(self, kind: ChatKind, key: str) -> bool:
        cancel = self._running.pop((kind, key), None)
        if cancel is None:
            return False
        cancel()
        return True

    def __len__(self) -> int:
        return len(self._running)


class MemoryState(SharedState):
    shared = False
    replica_id = "local"

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._documents: dict[str, LruDocuments] = {}
        self._max = max_entries
        self.chats = LocalChats()

    async def get_json(self, namespace: str, key: str) -> dict[str, Any] | None:
        documents = self._documents.get(namespace)
        return documents.get(key) if documents is not None else None

    async def put_json(self, namespace: str, key: str, value: dict[str, Any], ttl_seconds: float) -> None:
        self._documents.setdefault(namespace, LruDocuments(self._max)).put(key, value, ttl_seconds)

    def register_chat(self, kind: ChatKind, key: str, cancel: CancelCallback) -> Callable[[], None]:
        return self.chats.register(kind, key, cancel)

    async def cancel_chat(self, kind: ChatKind, key: str) -> bool:
        return self.chats.cancel(kind, key)
