"""Path templates of ``google.api.http`` rules: parse, compile, match.

Grammar (googleapis ``google/api/http.proto``)::

    Template = "/" Segments [ Verb ] ;
    Segments = Segment { "/" Segment } ;
    Segment  = "*" | "**" | LITERAL | Variable ;
    Variable = "{" FieldPath [ "=" Segments ] "}" ;
    FieldPath = IDENT { "." IDENT } ;
    Verb     = ":" LITERAL ;

A template compiles to a list of *slots*, one per path segment: a literal, ``ONE``
(exactly one segment) or ``MANY`` (a run of segments). At most one ``MANY`` slot is
allowed per template, so a match is decided in one pass: the slots before it match
from the front, the slots after it from the back, and it takes what is left.

Greedy variables (our one extension of the spec): a single-segment variable
``{name}`` that the caller marks as *greedy* compiles to ``MANY`` with a minimum of one
segment. The gateway marks every variable that names no field of the request message
(``{agent_name}``), so ``/api/v1/{agent_name}/function`` matches
``/api/v1/deep/math_guy/function`` with ``agent_name = "deep/math_guy"``. A template that
already has ``**`` or a multi-segment variable keeps its variables single-segment.

Percent-decoding follows the spec: single-segment captures are fully decoded,
multi-segment captures keep ``%2F`` encoded so that a decoded ``/`` is always a real
separator. Greedy variables are fully decoded (``deep%2Fmath_guy`` = ``deep/math_guy``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_LITERAL = re.compile(r"^[^/{}*=:]+$")


class InvalidTemplateError(ValueError):
    """A ``google.api.http`` path template does not follow the grammar."""

    def __init__(self, template: str, reason: str) -> None:
        super().__init__(f"invalid path template {template!r}: {reason}")
        self.template = template
        self.reason = reason


class SlotKind(Enum):
    LITERAL = "literal"
    ONE = "one"
    MANY = "many"


@dataclass(frozen=True, slots=True)
class Slot:
    kind: SlotKind
    literal: str = ""
    #: Minimum number of segments a MANY slot takes (0 for ``**``, 1 for a greedy var).
    minimum: int = 0


@dataclass(frozen=True, slots=True)
class Variable:
    """A ``{field.path=...}`` of a template: which slots it covers."""

    name: str
    start: int
    end: int  # exclusive slot index


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed template: the raw segments (variables as nested tuples) and the verb."""

    text: str
    # Each entry is a literal, "*", "**", or (var_name, tuple of sub-segments).
    segments: tuple[str | tuple[str, tuple[str, ...]], ...]
    verb: str

    @property
    def variable_names(self) -> tuple[str, ...]:
        return tuple(seg[0] for seg in self.segments if isinstance(seg, tuple))


def parse_template(text: str) -> Template:
    """Parse ``text`` or raise :class:`InvalidTemplateError`."""
    if not text.startswith("/"):
        raise InvalidTemplateError(text, "must start with '/'")
    body, verb = text[1:], ""
    # The verb is a ':' after the last '}' or '/', i.e. outside any variable.
    colon = body.rfind(":")
    if colon >= 0 and colon > body.rfind("}") and colon > body.rfind("/"):
        body, verb = body[:colon], body[colon + 1 :]
        if not verb or not _LITERAL.match(verb):
            raise InvalidTemplateError(text, f"bad verb {verb!r}")
    segments: list[str | tuple[str, tuple[str, ...]]] = []
    for raw in _split_outside_braces(text, body):
        if raw.startswith("{"):
            if not raw.endswith("}"):
                raise InvalidTemplateError(text, f"unterminated variable {raw!r}")
            inner = raw[1:-1]
            name, _, sub = inner.partition("=")
            if not _IDENT.match(name):
                raise InvalidTemplateError(text, f"bad field path {name!r}")
            sub_segments = tuple(sub.split("/")) if sub else ("*",)
            for part in sub_segments:
                if part not in ("*", "**") and not _LITERAL.match(part):
                    raise InvalidTemplateError(text, f"bad segment {part!r} in {raw!r}")
            segments.append((name, sub_segments))
        elif raw in ("*", "**") or _LITERAL.match(raw):
            segments.append(raw)
        else:
            raise InvalidTemplateError(text, f"bad segment {raw!r}")
    for index, seg in enumerate(segments):
        parts = seg[1] if isinstance(seg, tuple) else (seg,)
        if "**" in parts and (index != len(segments) - 1 or parts[-1] != "**"):
            raise InvalidTemplateError(text, "'**' must be the last segment")
    names = [seg[0] for seg in segments if isinstance(seg, tuple)]
    if len(names) != len(set(names)):
        raise InvalidTemplateError(text, "a variable appears twice")
    return Template(text=text, segments=tuple(segments), verb=verb)


def _split_outside_braces(template: str, body: str) -> list[str]:
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(body):
        if char == "{":
            depth += 1
            if depth > 1:
                raise InvalidTemplateError(template, "nested variables are not allowed")
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise InvalidTemplateError(template, "unbalanced '}'")
        elif char == "/" and depth == 0:
            parts.append(body[start:index])
            start = index + 1
    if depth:
        raise InvalidTemplateError(template, "unbalanced '{'")
    parts.append(body[start:])
    if any(part == "" for part in parts):
        raise InvalidTemplateError(template, "empty segment")
    return parts


class CompiledPattern:
    """A template compiled for matching against request paths."""

    __slots__ = (
        "_full_decode",
        "_many",
        "_prefix_len",
        "_suffix_len",
        "slots",
        "template",
        "variables",
        "verb",
    )

    def __init__(self, template: Template, greedy: frozenset[str] = frozenset()) -> None:
        self.template = template
        self.verb = template.verb
        slots: list[Slot] = []
        variables: list[Variable] = []
        full_decode: set[str] = set()
        has_many = any(
            seg == "**" or (isinstance(seg, tuple) and (len(seg[1]) > 1 or "**" in seg[1]))
            for seg in template.segments
        )
        for seg in template.segments:
            if isinstance(seg, tuple):
                name, sub = seg
                start = len(slots)
                if sub == ("*",) and name in greedy and not has_many:
                    slots.append(Slot(SlotKind.MANY, minimum=1))
                    has_many = True
                    full_decode.add(name)
                else:
                    slots.extend(_slot(part) for part in sub)
                variables.append(Variable(name, start, len(slots)))
            else:
                slots.append(_slot(seg))
        many = [index for index, slot in enumerate(slots) if slot.kind is SlotKind.MANY]
        if len(many) > 1:
            raise InvalidTemplateError(template.text, "more than one multi-segment part")
        self.slots = tuple(slots)
        self.variables = tuple(variables)
        self._full_decode = frozenset(full_decode)
        self._many = many[0] if many else -1
        self._prefix_len = many[0] if many else len(slots)
        self._suffix_len = len(slots) - many[0] - 1 if many else 0

    @property
    def literal_count(self) -> int:
        return sum(1 for slot in self.slots if slot.kind is SlotKind.LITERAL)

    @property
    def shape(self) -> tuple[object, ...]:
        """What decides which paths match: two patterns with equal shapes conflict."""
        return (
            tuple((s.kind, s.literal, s.minimum) for s in self.slots),
            self.verb,
        )

    def specificity(self) -> tuple[int, int, int]:
        """Sort key, most specific first: more literals, fixed length, more segments."""
        return (-self.literal_count, 1 if self._many >= 0 else 0, -len(self.slots))

    def match(self, segments: list[str]) -> dict[str, str] | None:
        """Match raw (still percent-encoded) path segments; return the captures or None."""
        if self.verb:
            suffix = ":" + self.verb
            if not segments or not segments[-1].endswith(suffix):
                return None
            segments = [*segments[:-1], segments[-1][: -len(suffix)]]
        slots = self.slots
        count = len(segments)
        if self._many < 0:
            if count != len(slots):
                return None
            extra = 0
        else:
            extra = count - len(slots) + 1  # how many segments the MANY slot takes
            if extra < slots[self._many].minimum:
                return None
        for index in range(self._prefix_len):
            slot = slots[index]
            if slot.kind is SlotKind.LITERAL and unquote(segments[index]) != slot.literal:
                return None
        if self._many >= 0:
            offset = count - self._suffix_len
            for index in range(self._suffix_len):
                slot = slots[self._many + 1 + index]
                if slot.kind is SlotKind.LITERAL and unquote(segments[offset + index]) != (
                    slot.literal
                ):
                    return None
        captures: dict[str, str] = {}
        for variable in self.variables:
            start = self._segment_index(variable.start, extra)
            end = self._segment_index(variable.end, extra)
            if variable.name in self._full_decode:
                # A greedy variable was declared single-segment: a client may send its
                # "/" as is or as %2F, and both mean the same name.
                captures[variable.name] = unquote("/".join(segments[start:end]))
            elif end - start == 1 and variable.end - variable.start == 1 and (
                slots[variable.start].kind is SlotKind.ONE
            ):
                captures[variable.name] = unquote(segments[start])
            else:
                captures[variable.name] = "/".join(
                    _unquote_keep_slash(part) for part in segments[start:end]
                )
        return captures

    def _segment_index(self, slot_index: int, extra: int) -> int:
        if self._many < 0 or slot_index <= self._many:
            return slot_index
        return slot_index + extra - 1


def _slot(part: str) -> Slot:
    if part == "*":
        return Slot(SlotKind.ONE)
    if part == "**":
        return Slot(SlotKind.MANY, minimum=0)
    return Slot(SlotKind.LITERAL, literal=part)


def _unquote_keep_slash(segment: str) -> str:
    if "%" not in segment:
        return segment
    return unquote(segment.replace("%2F", "%252F").replace("%2f", "%252f"))


def split_path(raw_path: str) -> list[str]:
    """Split a raw request path (no query string) into its segments.

    A trailing slash is ignored; the segments stay percent-encoded.
    """
    path = raw_path[1:] if raw_path.startswith("/") else raw_path
    if path.endswith("/"):
        path = path[:-1]
    return path.split("/") if path else []
