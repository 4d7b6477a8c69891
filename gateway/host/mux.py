"""The route table: which handler serves a method and path, 404 versus 405.

Entries are sorted once, most specific first (more literal segments, then fixed-length
patterns before variable-length ones), so ``GET /api/v1/list`` reaches the concierge
and never an agent called ``list``. A path that some entry matches under another
HTTP method is a 405 with ``Allow``; a path nothing matches is a 404.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from gateway.host.pattern import CompiledPattern, parse_template, split_path

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    http_method: str
    pattern: CompiledPattern
    target: T


@dataclass(frozen=True, slots=True)
class Match(Generic[T]):
    target: T
    captures: dict[str, str]


class NoRoute(LookupError):
    """No entry matches the path (404)."""


class MethodNotAllowed(LookupError):
    """The path matches, but only for other methods (405)."""

    def __init__(self, allowed: list[str]) -> None:
        super().__init__("method not allowed")
        self.allowed = allowed


class Router(Generic[T]):
    """Matches (method, raw path) to a target."""

    def __init__(self, entries: Iterable[Entry[T]]) -> None:
        self._entries = sorted(entries, key=lambda entry: entry.pattern.specificity())

    @property
    def entries(self) -> tuple[Entry[T], ...]:
        return tuple(self._entries)

    @staticmethod
    def fixed(http_method: str, path: str, target: T) -> Entry[T]:
        """An entry for a literal path such as ``/healthz``."""
        return Entry(http_method, CompiledPattern(parse_template(path)), target)

    def match(self, http_method: str, raw_path: str) -> Match[T]:
        """The target for this request; raises NoRoute or MethodNotAllowed."""
        segments = split_path(raw_path)
        allowed: list[str] = []
        lookup = "GET" if http_method == "HEAD" else http_method
        for entry in self._entries:
            captures = entry.pattern.match(segments)
            if captures is None:
                continue
            if entry.http_method == lookup:
                return Match(entry.target, captures)
            if entry.http_method not in allowed:
                allowed.append(entry.http_method)
        if allowed:
            raise MethodNotAllowed(allowed)
        raise NoRoute(raw_path)

    def allowed_methods(self, raw_path: str) -> list[str]:
        """Every method some entry serves on this path (for OPTIONS and CORS)."""
        segments = split_path(raw_path)
        methods: list[str] = []
        for entry in self._entries:
            if entry.http_method not in methods and entry.pattern.match(segments) is not None:
                methods.append(entry.http_method)
        return methods
