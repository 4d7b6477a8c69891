"""Each A2A ``contextId``'s chat_context, so a client may continue by ``contextId`` alone.

The continuation state (our chat_context, signed when ``AGENT_CHAT_CONTEXT_KEY`` is set) is
also returned in the answer's metadata, so a client that sends it back needs nothing kept
here. For clients that send the ``contextId`` only, this memory lives in the shared state
(:mod:`gateway.state`): on Redis with ``AGENT_REDIS_URL`` (any replica continues the
conversation), else in this replica's memory. Either way it is bounded and expires
(``AGENT_A2A_CONTEXT_TTL_SECONDS``, an hour by default). Keys are scoped by the front-end
to the caller's credentials and the network.
"""

from __future__ import annotations

import os
from typing import Any

from gateway.state import SharedState
from gateway.state.memory import MemoryState

TTL_ENV = "AGENT_A2A_CONTEXT_TTL_SECONDS"
DEFAULT_TTL_SECONDS = 3600.0
NAMESPACE = "a2a-context"


def context_ttl_seconds() -> float:
    raw = os.environ.get(TTL_ENV, "").strip()
    if not raw:
        return DEFAULT_TTL_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{TTL_ENV} must be a number of seconds, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{TTL_ENV} must be positive, not {raw!r}")
    return value


class ConversationStore:
    """contextId → chat_context as JSON, in the shared state."""

    def __init__(self, state: SharedState | None = None, ttl_seconds: float | None = None) -> None:
        self._state = state or MemoryState()
        self._ttl = ttl_seconds or context_ttl_seconds()

    async def get(self, context_id: str) -> dict[str, Any] | None:
        return await self._state.get_json(NAMESPACE, context_id)

    async def put(self, context_id: str, chat_context: dict[str, Any]) -> None:
        await self._state.put_json(NAMESPACE, context_id, chat_context, self._ttl)
