"""``threadId`` → the thread's chat_context, in the shared state.

An AG-UI client names its conversation by ``threadId`` and sends its whole message list
each run; the network continues from the chat_context its last answer gave (signed when
``AGENT_CHAT_CONTEXT_KEY`` is set), kept here under the thread's id in the shared state
(:mod:`gateway.state`): on Redis with ``AGENT_REDIS_URL`` any replica continues the
thread, else this replica's memory. Ids are scoped to the caller's credentials and the
network (:func:`~gateway.state.conversations.scoped_id`), so one caller cannot continue
another's thread by guessing its id. Threads expire as every conversation does
(``AGENT_A2A_CONTEXT_TTL_SECONDS``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gateway.state import SharedState
from gateway.state.conversations import ConversationStore, scoped_id

#: The threads' namespace in the shared state.
AGUI_NAMESPACE = "ag-ui-thread"


def owner_of(headers: Mapping[str, str]) -> str:
    """A stable, non-reversible scope for the credentials in these headers ("" without any)."""
    secret = headers.get("authorization") or headers.get("x-api-key") or ""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:32] if secret else ""


class ThreadStore:
    """The chat_context of each thread, per caller and network."""

    def __init__(self, state: SharedState) -> None:
        self._store = ConversationStore(state, namespace=AGUI_NAMESPACE)

    async def get(self, owner: str, network: str, thread_id: str) -> dict[str, Any] | None:
        """The thread's chat_context, or None; raises ``StateUnavailable`` when Redis is away."""
        return await self._store.get(scoped_id(owner, network, thread_id))

    async def put(self, owner: str, network: str, thread_id: str, chat_context: Mapping[str, Any]) -> None:
        await self._store.put(scoped_id(owner, network, thread_id), dict(chat_context))
