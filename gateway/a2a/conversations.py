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

from typing import Any

from gateway.state import SharedState, StateSettings
from gateway.state.memory import MemoryState

NAMESPACE = "a2a-context"


class ConversationStore:
    """contextId → chat_context as JSON, in the shared state."""

    def __init__(self, state: SharedState | None = None, ttl_seconds: float | None = None) -> None:
        self._state = state or MemoryState()
        self._ttl = ttl_seconds or StateSettings.from_env().context_ttl_seconds

    async def get(self, context_id: str) -> dict[str, Any] | None:
        return await self._state.get_json(NAMESPACE, context_id)

    async def put(self, context_id: str, chat_context: dict[str, Any]) -> None:
        await self._state.put_json(NAMESPACE, context_id, chat_context, self._ttl)
