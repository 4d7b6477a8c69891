"""Where persistent memory lives: topics (name → text) per ``(network, agent)``.

Two file layouts, as neuro-san-studio's stores write them:

- ``json_file``: ``<folder>/<network>/<agent>/<file_name>.json``, one JSON object
  ``{topic: text}`` (sorted keys, indented by 2) per agent;
- ``markdown_file``: ``<folder>/<network>/<agent>/<topic stem>.md``, one file per topic
  holding ``# <topic>``, a blank line and the text.

Every operation is a read-modify-write of the files under a lock per agent (one process;
several server processes sharing a folder may interleave, as in studio). File I/O runs in
a worker thread; writes go to a temporary file first and are renamed into place.

The third backend, ``mem0`` (the Mem0 Platform), is ``memory_mem0``; the memory tool sees
every backend through :class:`MemoryStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_LOCKS: dict[tuple[str, ...], asyncio.Lock] = {}


def safe_segment(text: str) -> str:
    """A name usable as one path part: unsafe characters become ``_``."""
    cleaned = _UNSAFE.sub("_", text).strip("_")
    return cleaned or "unknown"


class MemoryBackendError(Exception):
    """A backend could not do an operation (the Mem0 Platform failed, say); the tool
    answers ``{"error": str(error)}``."""


class MemoryStore(Protocol):
    """What the memory tool needs of a backend: one agent's topics (name → text)."""

    async def read(self, topic: str) -> str | None: ...

    async def create(self, topic: str, content: str) -> None: ...

    async def append(self, topic: str, content: str) -> str: ...

    async def replace_if_unchanged(self, topic: str, seen: str, new: str) -> None: ...

    async def delete(self, topic: str) -> None: ...

    async def topics(self) -> dict[str, str]: ...

    async def search(self, query: str, limit: int) -> list[dict[str, Any]]: ...


def keyed_lock(key: tuple[str, ...]) -> asyncio.Lock:
    """The process-wide lock of ``key`` (one agent's memory)."""
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = asyncio.Lock()
    return lock


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class TopicStore:
    """The operations the memory tool needs; subclasses read and write one agent's topics."""

    def __init__(self, folder: Path, network: str, agent: str) -> None:
        self.base = folder / safe_segment(network) / safe_segment(agent)
        self._key = ("memory", str(self.base))

    async def _locked(self, work: Callable[[], T]) -> T:
        async with keyed_lock(self._key):
            return await asyncio.to_thread(work)

    # What subclasses provide (blocking, called in a worker thread under the lock).
    def _load(self) -> dict[str, str]:
        raise NotImplementedError

    def _save_topic(self, topics: dict[str, str], topic: str) -> None:
        raise NotImplementedError

    def _remove_topic(self, topics: dict[str, str], topic: str) -> None:
        raise NotImplementedError

    # The operations.
    async def read(self, topic: str) -> str | None:
        return await self._locked(lambda: self._load().get(topic))

    async def create(self, topic: str, content: str) -> None:
        def work() -> None:
            topics = self._load()
            topics[topic] = content
            self._save_topic(topics, topic)

        await self._locked(work)

    async def append(self, topic: str, content: str) -> str:
        """Add ``[YYYY-MM-DD HH:MM:SS] content`` as a new line; the topic's new text."""
        line = f"[{datetime.now().strftime('%Y-%m-%d %H:%M:%S')}] {content}"

        def work() -> str:
            topics = self._load()
            existing = topics.get(topic)
            topics[topic] = f"{existing}\n{line}" if existing else line
            self._save_topic(topics, topic)
            return topics[topic]

        return await self._locked(work)

    async def replace_if_unchanged(self, topic: str, seen: str, new: str) -> None:
        """Write ``new`` unless the topic changed since it was ``seen`` (summaries)."""

        def work() -> None:
            topics = self._load()
            if topics.get(topic) == seen:
                topics[topic] = new
                self._save_topic(topics, topic)

        await self._locked(work)

    async def delete(self, topic: str) -> None:
        def work() -> None:
            topics = self._load()
            if topic in topics:
                self._remove_topic(topics, topic)

        await self._locked(work)

    async def topics(self) -> dict[str, str]:
        return await self._locked(self._load)

    async def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        return keyword_rank(await self.topics(), query, limit)


class JsonTopicStore(TopicStore):
    def __init__(self, folder: Path, network: str, agent: str, file_name: str = "memory") -> None:
        super().__init__(folder, network, agent)
        self.path = self.base / f"{safe_segment(file_name)}.json"

    def _load(self) -> dict[str, str]:
        try:
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # a missing or unreadable file is an empty memory, as in studio
        if not isinstance(data, dict):
            return {}
        return {str(key): value if isinstance(value, str) else json.dumps(value) for key, value in data.items()}

    def _save_topic(self, topics: dict[str, str], topic: str) -> None:
        _write_atomically(self.path, json.dumps(topics, ensure_ascii=False, indent=2, sort_keys=True))

    def _remove_topic(self, topics: dict[str, str], topic: str) -> None:
        del topics[topic]
        self._save_topic(topics, topic)


class MarkdownTopicStore(TopicStore):
    def _path(self, topic: str) -> Path:
        stem = _UNSAFE.sub("_", topic).strip("_").lower() or "untitled"
        return self.base / f"{stem}.md"

    def _load(self) -> dict[str, str]:
        topics: dict[str, str] = {}
        if not self.base.is_dir():
            return topics
        for path in sorted(self.base.glob("*.md")):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                heading, _, body = path.read_text(encoding="utf-8").partition("\n")
                topic = heading[2:].strip() if heading.startswith("# ") else path.stem
                topics[topic] = body.strip("\n")
        return topics

    def _save_topic(self, topics: dict[str, str], topic: str) -> None:
        _write_atomically(self._path(topic), f"# {topic}\n\n{topics[topic]}\n")

    def _remove_topic(self, topics: dict[str, str], topic: str) -> None:
        del topics[topic]
        with contextlib.suppress(FileNotFoundError):
            self._path(topic).unlink()


def keyword_rank(topics: dict[str, str], query: str, limit: int) -> list[dict[str, Any]]:
    """Topics holding the query's words (case-insensitive), best first: the share of the
    query's distinct words found, rounded to 4 places."""
    words = {word for word in query.lower().split() if word}
    if not words:
        return []
    scored = []
    for topic, content in topics.items():
        hits = sum(1 for word in words if word in content.lower())
        if hits:
            scored.append((round(hits / len(words), 4), topic, content))
    scored.sort(key=lambda item: item[0], reverse=True)
    return [{"topic": topic, "content": content, "score": score} for score, topic, content in scored[:limit]]
