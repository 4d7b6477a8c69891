"""Admission: a cap on concurrent chats, and refusal while draining.

Over the cap a chat is refused at once (RESOURCE_EXHAUSTED; 503 over HTTP) rather than
queued without bound: an agent turn can hold LLM connections for minutes, so queueing
would only move the overload into memory and into every client's latency.
"""

from __future__ import annotations

from types import TracebackType

from neuro_san.core.errors import Draining, Overloaded


class Admission:
    def __init__(self, limit: int = 0) -> None:
        #: The most chats at once; 0 means no cap.
        self.limit = limit
        self.active = 0
        self.draining = False
        self._place = _Place(self)

    def chat(self) -> _Place:
        """``with admission.chat():`` holds a place for one chat, or raises Draining /
        Overloaded on entering. One shared, stateless object: no per-chat allocation (a
        ``@contextmanager`` built a generator and its wrapper for every chat)."""
        return self._place

    def _take(self) -> None:
        if self.draining:
            raise Draining("the server is shutting down; send new chats to another replica")
        if self.limit and self.active >= self.limit:
            raise Overloaded(
                f"the server is at its limit of {self.limit} concurrent chats "
                "(AGENT_MAX_CONCURRENT_REQUESTS); retry later"
            )
        self.active += 1


class _Place:
    __slots__ = ("_admission",)

    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    def __enter__(self) -> None:
        self._admission._take()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._admission.active -= 1
