"""Removing the designer's common instructions from a definition's instructions.

An agent's ``instructions`` in ``agent_network_definition`` are meant to be its own text:
every save adds the common pieces back (the prefix naming the network, the front man's
lines, the demo sentence, and ``aaosa_instructions`` from ``registries/aaosa.hocon``). A
network loaded from a file or a reservation, or sent back by a client that read a saved
network, has them inlined; kept, each save would add one more copy. Studio strips them
before the definition is used, and so does this module, with the same observable rules:

- whole copies only, compared word by word (whitespace between words does not matter; the
  text that remains keeps its own whitespace): the prefix (under any network name of up to
  16 words ending with a period), the front man's lines and the demo sentence at the start,
  the AAOSA instructions at the end, however many copies and in whatever order;
- every piece from every agent, whatever its role;
- a text with no copy comes back unchanged; a text that is nothing but copies keeps one
  copy of each piece found (an empty text would fail validation or become a toolbox agent).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.files import read_document
from neuro_san.studio.designer_files import DEMO_SENTENCE, FRONT_MAN_LINES, PREFIX_OPENING, PREFIX_RULES

log = logging.getLogger(__name__)

AAOSA_FILE = "registries/aaosa.hocon"
MAX_NAME_WORDS = 16
_WORD = re.compile(r"\S+")
_ORDER = ("prefix", "front_man_lines", "demo_sentence", "aaosa_instructions")

#: The AAOSA text by (file, modification time): read once per version of the file.
_aaosa_cache: dict[tuple[str, int], str] = {}


def _words(text: str | None) -> list[str]:
    return _WORD.findall(text) if isinstance(text, str) else []


class CommonInstructions:
    """The pieces a save adds, as words; :meth:`strip` takes their copies off a text."""

    def __init__(self, aaosa_instructions: str | None) -> None:
        self.opening = _words(PREFIX_OPENING)
        self.rules = _words(PREFIX_RULES)
        self.aaosa = _words(aaosa_instructions)
        front, demo = _words(FRONT_MAN_LINES), _words(DEMO_SENTENCE)
        self._leading: tuple[tuple[str, Callable[[list[str], int, int], int]], ...] = (
            ("prefix", self._prefix),
            ("front_man_lines", lambda words, lo, hi: _starts_with(words, lo, hi, front)),
            ("demo_sentence", lambda words, lo, hi: _starts_with(words, lo, hi, demo)),
        )

    def _prefix(self, words: list[str], lo: int, hi: int) -> int:
        """Words of a prefix copy at ``lo`` (opening, a name ending with ".", the rules), or 0."""
        at = lo + _starts_with(words, lo, hi, self.opening)
        if at == lo:
            return 0
        for name_end in range(at + 1, min(at + MAX_NAME_WORDS, hi) + 1):
            if words[name_end - 1].endswith("."):
                rules = _starts_with(words, name_end, hi, self.rules)
                if rules:
                    return name_end + rules - lo
        return 0

    def strip(self, text: str) -> str:
        spans = [match.span() for match in _WORD.finditer(text)]
        words = [text[start:end] for start, end in spans]
        lo, hi = 0, len(words)
        first: dict[str, tuple[int, int]] = {}
        found = True
        while found:
            found = False
            for piece, match in self._leading:
                while count := match(words, lo, hi):
                    first.setdefault(piece, (lo, lo + count))
                    lo, found = lo + count, True
            while self.aaosa and hi - len(self.aaosa) >= lo and words[hi - len(self.aaosa) : hi] == self.aaosa:
                first.setdefault("aaosa_instructions", (hi - len(self.aaosa), hi))
                hi, found = hi - len(self.aaosa), True
        if not first:
            return text
        if lo < hi:
            return text[spans[lo][0] : spans[hi - 1][1]]
        kept = [first[piece] for piece in _ORDER if piece in first]
        return "\n".join(text[spans[start][0] : spans[end - 1][1]] for start, end in kept)

    def strip_definition(self, network: Mapping[str, Any]) -> dict[str, Any] | None:
        """The definition with its agents' instructions stripped, or None when none changed."""
        changed = False
        result: dict[str, Any] = {}
        for name, spec in network.items():
            result[name] = spec
            instructions = spec.get("instructions") if isinstance(spec, Mapping) else None
            if isinstance(spec, Mapping) and isinstance(instructions, str):
                stripped = self.strip(instructions)
                if stripped != instructions:
                    result[name] = {**spec, "instructions": stripped}
                    changed = True
        return result if changed else None


def _starts_with(words: list[str], lo: int, hi: int, piece: list[str]) -> int:
    end = lo + len(piece)
    return len(piece) if piece and end <= hi and words[lo:end] == piece else 0


def _read_aaosa(path: Path) -> str:
    try:
        document = read_document(path)
    except NetworkLoadError as error:
        log.error("designer: cannot read %s (%s); AAOSA instructions are not stripped", path, error)
        return ""
    value = document.get("aaosa_instructions") if isinstance(document, Mapping) else None
    return value if isinstance(value, str) else ""


def _aaosa_text() -> str:
    """The current ``aaosa_instructions`` of the project's file ("" without one). Blocking I/O."""
    path = Path(AAOSA_FILE)
    try:
        key = (os.path.realpath(path), path.stat().st_mtime_ns)
    except OSError:
        return ""  # no file: the networks that include it would not load either
    text = _aaosa_cache.get(key)
    if text is None:
        text = _read_aaosa(path)
        _aaosa_cache.clear()  # only the current version is asked for again
        _aaosa_cache[key] = text
    return text


async def common_instructions() -> CommonInstructions:
    """The pieces as the project's ``registries/aaosa.hocon`` (working directory) words them now."""
    return CommonInstructions(await asyncio.to_thread(_aaosa_text))
