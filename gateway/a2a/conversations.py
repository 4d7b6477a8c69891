"""A bounded, expiring, per-replica memory of each A2A ``contextId``'s chat_context.

The server stays stateless across replicas: the continuation state (our chat_context,
signed when ``AGENT_CHAT_CONTEXT_KEY`` is set) is also returned in the answer's
metadata, so a client that sends it back may reach any replica. This store only serves
clients that send the ``contextId`` alone; it lives in one replica's memory.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

DEFAULT_MAX_CONTEXTS = 10_000
DEFAULT_TTL_SECONDS = 3600.0


class ConversationStore:
    """contextId → (chat_context as JSON, expiry); least recently used evicted first."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_CONTEXTS,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[str, tuple[dict[str, Any], float]] = OrderedDict()

    def get(self, context_id: str) -> dict[str, Any] | None:
        entry = self._entries.get(context_id)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._entries[context_id]
            return None
        self._entries.move_to_end(context_id)
        return entry[0]

    def put(self, context_id: str, chat_context: dict[str, Any]) -> None:
        if not context_id or self._max <= 0:
            return
        self._entries[context_id] = (chat_context, self._clock() + self._ttl)
        self._entries.move_to_end(context_id)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
