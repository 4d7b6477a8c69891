"""Admission: a cap on concurrent chats, and refusal while draining.

Over the cap a chat is refused at once (RESOURCE_EXHAUSTED; 503 over HTTP) rather than
queued without bound: an agent turn can hold LLM connections for minutes, so queueing
would only move the overload into memory and into every client's latency.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from neuro_san.core.errors import Draining, Overloaded


class Admission:
    def __init__(self, limit: int = 0) -> None:
        #: The most chats at once; 0 means no cap.
        self.limit = limit
        self.active = 0
        self.draining = False

    @contextmanager
    def chat(self) -> Iterator[None]:
        """Hold a place for one chat, or raise Draining / Overloaded."""
        if self.draining:
            raise Draining("the server is shutting down; send new chats to another replica")
        if self.limit and self.active >= self.limit:
            raise Overloaded(
                f"the server is at its limit of {self.limit} concurrent chats "
                "(AGENT_MAX_CONCURRENT_REQUESTS); retry later"
            )
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1
