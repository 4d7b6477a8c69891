"""Conversations kept by id, so a client may continue one by naming it alone.

A protocol front-end whose clients send an id instead of neuro-san's ``chat_context``
(A2A's ``contextId``; OpenAI's ``previous_response_id``; AG-UI's ``threadId``) keeps the
chat_context (signed when ``AGENT_CHAT_CONTEXT_KEY`` is set) here, under that id, in its
own namespace. The store lives in the shared state (:mod:`gateway.state`): on Redis with
``AGENT_REDIS_URL`` (any replica continues the conversation), else in this replica's
memory. Either way it is bounded and expires (``AGENT_A2A_CONTEXT_TTL_SECONDS``, an hour
by default, for every namespace). The front-end scopes its ids to the caller's
credentials and the network (see :func:`scoped_id`), so one caller cannot continue
another's conversation by guessing its id.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gateway.state.interface import SharedState, StateSettings
from gateway.state.memory import MemoryState

#: A2A's namespace (kept from before the store was shared by front-ends).
A2A_NAMESPACE = "a2a-context"


def scoped_id(owner: str, network: str, conversation_id: str) -> str:
    """The key of ``conversation_id`` for ``owner`` (a digest of the caller's
    credentials) on ``network``: ids never collide across callers or networks."""
    digest = hashlib.sha256("\0".join((owner, network, conversation_id)).encode()).hexdigest()
    return digest


class ConversationStore:
    """id → a JSON document (a chat_context, or what a front-end keeps with it), in one
    namespace of the shared state."""

    def __init__(
        self, state: SharedState | None = None, ttl_seconds: float | None = None, namespace: str = A2A_NAMESPACE
    ) -> None:
        self._state = state or MemoryState()
        self._ttl = ttl_seconds or StateSettings.from_env().context_ttl_seconds
        self._namespace = namespace

    async def get(self, conversation_id: str) -> dict[str, Any] | None:
        """The document, or None (never stored, expired or evicted). Raises
        :class:`~gateway.state.interface.StateUnavailable` when Redis is away."""
        return await self._state.get_json(self._namespace, conversation_id)

    async def put(self, conversation_id: str, document: dict[str, Any]) -> None:
        await self._state.put_json(self._namespace, conversation_id, document, self._ttl)
