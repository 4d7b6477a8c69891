"""What the front man's chat_context keeps besides the user's text and its answer.

neuro-san 0.7 keeps, in the front man's history, one AI message per tool result the
front man received (in call order) before its final answer, so the next turn's LLM
request carries what the tools said. :func:`front_man_transcript` scopes one request;
the agent loop reports each tool result with :func:`note_tool_result`, and only those
of the scoped front man are kept. A ``/name`` network called in-process opens its own
scope, so its front man's results stay out of the caller's history.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from neuro_san.core.messages import OriginPath


@dataclass
class Transcript:
    origin: OriginPath
    tool_results: list[str] = field(default_factory=list)


_CURRENT: ContextVar[Transcript | None] = ContextVar("neuro_san_front_man_transcript", default=None)


@contextmanager
def front_man_transcript(origin: OriginPath) -> Iterator[Transcript]:
    transcript = Transcript(origin)
    token = _CURRENT.set(transcript)
    try:
        yield transcript
    finally:
        _CURRENT.reset(token)


def note_tool_result(origin: OriginPath, result: str) -> None:
    """Keep ``result`` when ``origin`` is the scoped front man's."""
    transcript = _CURRENT.get()
    if transcript is not None and transcript.origin == origin:
        transcript.tool_results.append(result)
