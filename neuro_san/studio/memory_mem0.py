"""neuro-san-studio's ``mem0`` memory backend: topics kept in the Mem0 Platform (the hosted
service, ``MEM0_API_KEY``) through the ``mem0ai`` package's ``AsyncMemoryClient``.

Kept as studio keeps them: one Mem0 memory per topic, stored verbatim (``infer=False``, so
Mem0 does not rewrite or split it), identified by ``user_id`` (the request's
``sly_data["user_id"]`` when the middleware's args ask for ``sly_data``, else
``MEM0_DEFAULT_USER_ID``, else ``default_user``), ``app_id`` (the network), ``agent_id``
(the agent) and ``metadata.topic``. Reads and lists go through Mem0's search with the
similarity threshold at 0 and the identity in the filters (the Platform's plain listing
does not return ``infer=False`` memories); the tool's ``search`` is Mem0's own semantic
search, ranked and scored by Mem0.

The client spoken to is the 0.1.x one (``mem0ai>=0.1.109,<0.1.116``): later versions
require protobuf below 7, which this server's generated code cannot run with. Its
constructor checks the key with a blocking request (``/v1/ping/``), so it is built in a
worker thread, once per key, host and event loop.

Load-time checks (:mod:`neuro_san.studio.mem0_settings`, read when a network loads) refuse
the backend with the reason when the package is missing or of another version, or when
``MEM0_API_KEY`` is unset (studio fails at the first tool call instead). ``MEM0_HOST``
(this server's addition) points the client at another Mem0 Platform address.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

# The settings are read at network load (mem0_settings, without importing mem0); the names stay importable here.
from neuro_san.studio.mem0_settings import SUPPORTED_TEXT, Mem0Settings
from neuro_san.studio.memory_store import MemoryBackendError, keyed_lock, safe_segment

__all__ = ["SUPPORTED_TEXT", "Mem0Settings", "Mem0TopicStore"]

T = TypeVar("T")

#: Mem0's search needs a query; with the threshold at 0 any text returns every match.
_ANY = "memory content"
#: The Platform's cap on ``top_k``: a list of more topics than this comes back cut short.
_LIST_LIMIT = 1000


class _ClientSlot:
    """One client per key and host, made in (and used only by) one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = asyncio.Lock()
        self.client: Any = None


_SLOTS: dict[tuple[str, str | None], _ClientSlot] = {}


def _new_client(settings: Mem0Settings) -> Any:
    # Imported here, not at the top: mem0 brings openai, qdrant-client, sqlalchemy and posthog
    # with it, needed only by the networks that use this backend.
    from mem0 import AsyncMemoryClient

    kwargs = {"api_key": settings.api_key} | ({"host": settings.host} if settings.host else {})
    return AsyncMemoryClient(**kwargs)


async def _client(settings: Mem0Settings) -> Any:
    loop = asyncio.get_running_loop()
    key = (settings.api_key, settings.host)
    slot = _SLOTS.get(key)
    if slot is None or slot.loop is not loop:  # a client's connections belong to the loop that made them
        slot = _SLOTS[key] = _ClientSlot(loop)
    async with slot.lock:
        if slot.client is None:
            slot.client = await asyncio.to_thread(_new_client, settings)  # its constructor blocks on a ping
        return slot.client


def _topic_of(memory: Mapping[str, Any]) -> str:
    metadata = memory.get("metadata")
    return str(metadata.get("topic") or "") if isinstance(metadata, Mapping) else ""


class Mem0TopicStore:
    """One agent's topics for one user in the Mem0 Platform (the ``MemoryStore`` operations)."""

    def __init__(self, settings: Mem0Settings, network: str, agent: str, user_id: str | None) -> None:
        self.settings = settings
        self.user_id = user_id or settings.default_user
        self.app_id = safe_segment(network)
        self.agent_id = safe_segment(agent)
        self._key = ("mem0", settings.host or "", self.user_id, self.app_id, self.agent_id)

    def _filters(self, topic: str | None = None) -> dict[str, Any]:
        clauses: list[dict[str, Any]] = [
            {"user_id": self.user_id},
            {"app_id": self.app_id},
            {"agent_id": self.agent_id},
        ]
        if topic is not None:
            clauses.append({"metadata": {"topic": topic}})
        return {"AND": clauses}

    async def _call(self, what: str, work: Callable[[Any], Awaitable[T]]) -> T:
        try:
            return await work(await _client(self.settings))
        except Exception as error:  # noqa: BLE001 - any failure of the client or the Platform is the tool's error
            raise MemoryBackendError(f"Mem0 {what} failed: {error}") from error

    async def _search(self, query: str, filters: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
        response = await self._call("search", lambda c: c.search(query, version="v2", filters=filters, **options))
        # The Platform answers a list, or {"results": [...]} in its newer output format.
        hits = response.get("results") if isinstance(response, Mapping) else response
        return [hit for hit in hits if isinstance(hit, dict)] if isinstance(hits, list) else []

    async def _find(self, topic: str) -> dict[str, Any] | None:
        hits = await self._search(_ANY, self._filters(topic), top_k=1, threshold=0)
        # The topic is checked again: a filter the Platform ignored must not return another topic.
        return next((hit for hit in hits if _topic_of(hit) == topic), None)

    async def _write(self, topic: str, content: str, existing: Mapping[str, Any] | None) -> None:
        metadata = {"topic": topic}
        memory_id = existing.get("id") if existing else None
        if memory_id:
            await self._call("update", lambda c: c.update(str(memory_id), text=content, metadata=metadata))
            return
        message = [{"role": "user", "content": content}]
        identity = {"user_id": self.user_id, "app_id": self.app_id, "agent_id": self.agent_id}
        await self._call(
            "add", lambda c: c.add(message, **identity, metadata=metadata, infer=False, output_format="v1.1")
        )

    # The operations the memory tool needs, each under the lock of this agent and user.
    async def read(self, topic: str) -> str | None:
        async with keyed_lock(self._key):
            found = await self._find(topic)
        return None if found is None else str(found.get("memory") or "")

    async def create(self, topic: str, content: str) -> None:
        async with keyed_lock(self._key):
            await self._write(topic, content, await self._find(topic))

    async def append(self, topic: str, content: str) -> str:
        """Add ``[YYYY-MM-DD HH:MM:SS] content`` as a new line; the topic's new text."""
        line = f"[{datetime.now().strftime('%Y-%m-%d %H:%M:%S')}] {content}"
        async with keyed_lock(self._key):
            found = await self._find(topic)
            existing = str(found.get("memory") or "") if found else ""
            text = f"{existing}\n{line}" if existing else line
            await self._write(topic, text, found)
        return text

    async def replace_if_unchanged(self, topic: str, seen: str, new: str) -> None:
        async with keyed_lock(self._key):
            found = await self._find(topic)
            if found is not None and found.get("memory") == seen:
                await self._write(topic, new, found)

    async def delete(self, topic: str) -> None:
        async with keyed_lock(self._key):
            found = await self._find(topic)
            if found is not None and found.get("id"):
                memory_id = str(found["id"])
                await self._call("delete", lambda c: c.delete(memory_id))

    async def topics(self) -> dict[str, str]:
        async with keyed_lock(self._key):
            hits = await self._search(_ANY, self._filters(), top_k=_LIST_LIMIT, threshold=0)
        return {_topic_of(hit): str(hit.get("memory") or "") for hit in hits if _topic_of(hit)}

    async def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        """Mem0's semantic search over this agent's topics (its threshold, its scores)."""
        async with keyed_lock(self._key):
            hits = await self._search(query, self._filters(), top_k=limit)
        return [
            {"topic": _topic_of(hit), "content": str(hit.get("memory") or ""), "score": hit.get("score", 0.0)}
            for hit in hits
            if _topic_of(hit)
        ]
