"""Read-only mappings the facade converts from protobuf only when a front-end reads them.

A MAXIMAL chat's answer comes with its chat_context and the request's token report. The
OpenAI API reads three numbers of that report and never the chat_context (the client owns
its history); AG-UI reads the report's ``models``. Each protobuf value read from Python
costs about a microsecond (upb's per-field access), so converting both whole cost tens of
microseconds per chat that nobody used. These mappings hold the message instead and
convert on access, each value once, to the JSON form REST would send (``struct_json``, the
codec's ``to_dict``): they compare equal to that form. ``dict()`` one to keep or serialize it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from google.protobuf.message import Message

from gateway.transcoder.marshal import whole_numbers_to_int
from gateway.transcoder.printer import print_value


class StructFields(Mapping[str, Any]):
    """A ``google.protobuf.Struct`` as its JSON object, each key converted when it is read."""

    __slots__ = ("_read", "_struct")

    def __init__(self, struct: Message) -> None:
        self._struct = struct
        self._read: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        try:
            return self._read[key]
        except KeyError:
            pass
        fields = self._struct.fields  # type: ignore[attr-defined]
        if key not in fields:
            raise KeyError(key)
        value = self._read[key] = whole_numbers_to_int(print_value(fields[key]))
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._struct.fields)  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self._struct.fields)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"StructFields({dict(self)!r})"


class Deferred(Mapping[str, Any]):
    """A JSON object made by ``make`` the first time anything of it is read."""

    __slots__ = ("_data", "_make")

    def __init__(self, make: Callable[[], dict[str, Any]]) -> None:
        self._make: Callable[[], dict[str, Any]] | None = make
        self._data: dict[str, Any] = {}

    def _made(self) -> dict[str, Any]:
        if self._make is not None:
            self._data, self._make = self._make(), None
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._made()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())

    def __repr__(self) -> str:
        return f"Deferred({self._made()!r})"
