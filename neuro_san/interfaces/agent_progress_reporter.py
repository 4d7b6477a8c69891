"""What coded tools get as ``args["progress_reporter"]`` (neuro-san compatible)."""

from __future__ import annotations

from typing import Any, Protocol


class AgentProgressReporter(Protocol):
    """Streams progress to the client as AGENT_PROGRESS messages.

    ``structure`` is a JSON-able dict (e.g. ``{"progress": 0.5}``); ``content`` is
    optional text. Reports appear in MAXIMAL streams in the order they were made.
    """

    async def async_report_progress(self, structure: dict[str, Any], content: str = "") -> None: ...
