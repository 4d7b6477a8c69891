"""A message's JSON text written straight from its fields, compiled per message type.

What :meth:`gateway.transcoder.marshal.MessageCodec.to_json` answers, the bytes of
``dumps(to_dict(message))``, without the dict in between: a streamed token's line used to be
built as a dict by the compiled printer, walked again for the always-present fields, then
encoded by ``json.dumps``, about 15 µs a delta of which the text itself is a fraction
(issue 37). Here each present field is written as JSON text by a converter chosen once per
field, with the encoder ``json.dumps(..., ensure_ascii=False)`` uses for strings, and the
always-present fields of ``present_fields.py`` appended where that module appends them (at
the end of their object).

Only what the compiled printer converts itself is written here (strings, booleans,
integers, enums, bytes, nested and repeated messages). A present field of any other kind
(a Struct, whose whole numbers ``marshal.py`` turns back into ints; a map; a well-known
type; a message type with floats, which protobuf prints) raises :class:`Unwritable`, and
the codec builds that message's JSON the dict way. ``tests/gateway/transcoder/test_json_writer.py``
checks the two agree on generated messages of every type the gateway prints.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]  # what dumps(ensure_ascii=False) uses
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from gateway.transcoder.present_fields import presence_plan
from gateway.transcoder.printer import printable_here

Write = Callable[[Any], str]

_INT64 = frozenset({FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64})
#: The JSON text of the always-present fields' empty values (present_fields.ALWAYS_PRESENT).
_EMPTY_TEXT: dict[Callable[[], Any], str] = {str: '""', list: "[]"}


class Unwritable(Exception):
    """A present field this writer leaves to the dict path."""


def writer_for(descriptor: Descriptor, memo: dict[str, Write] | None = None) -> Write:
    """The writer of ``descriptor``'s messages (built once; message types may recurse)."""
    memo = {} if memo is None else memo
    existing = memo.get(descriptor.full_name)
    if existing is not None:
        return existing
    if not printable_here(descriptor):
        memo[descriptor.full_name] = _unwritable
        return _unwritable
    fields: dict[int, tuple[str, Write]] = {}
    defaults = [
        (name, f"{encode_basestring(name)}:{_EMPTY_TEXT[empty]}")
        for name, empty in presence_plan(descriptor).defaults.items()
    ]
    writer = _ObjectWriter(fields, tuple(defaults))
    memo[descriptor.full_name] = writer  # registered first: a field may be of this type
    for fd in descriptor.fields:
        fields[fd.number] = (f"{encode_basestring(fd.name)}:", _field_writer(fd, memo))
    return writer


class _ObjectWriter:
    """A message as a JSON object: each present field, then the always-present ones missing."""

    __slots__ = ("_fields", "_defaults")

    def __init__(self, fields: dict[int, tuple[str, Write]], defaults: tuple[tuple[str, str], ...]) -> None:
        self._fields = fields
        self._defaults = defaults

    def __call__(self, message: Message) -> str:
        fields = self._fields
        listed = message.ListFields()
        parts = []
        for fd, value in listed:
            key, write = fields[fd.number]
            parts.append(key + write(value))
        if self._defaults:
            present = {fd.name for fd, _value in listed}
            parts += [text for name, text in self._defaults if name not in present]
        return "{" + ",".join(parts) + "}"


def _field_writer(fd: FieldDescriptor, memo: dict[str, Write]) -> Write:
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        return _unwritable  # maps: their keys and values take the dict path
    one = _value_writer(fd, memo)
    if fd.is_repeated:
        return lambda values: "[" + ",".join([one(value) for value in values]) + "]"
    return one


def _value_writer(fd: FieldDescriptor, memo: dict[str, Write]) -> Write:
    if fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        if fd.message_type.full_name.startswith("google.protobuf."):
            return _unwritable  # Struct and the other well-known types have JSON forms of their own
        return writer_for(fd.message_type, memo)
    if fd.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        if fd.enum_type.full_name == "google.protobuf.NullValue":
            return _null
        names = {value.number: encode_basestring(value.name) for value in fd.enum_type.values}
        return lambda number: names.get(number) or str(number)  # an open enum's unknown number stays a number
    if fd.type == FieldDescriptor.TYPE_STRING:
        return encode_basestring  # type: ignore[no-any-return]
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return _base64
    if fd.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
        return _bool
    if fd.cpp_type in _INT64:
        return _quoted_int  # printed as strings (JSON numbers lose precision past 2**53)
    return int.__repr__  # 32-bit integers, as json.dumps writes them


def _unwritable(_value: Any) -> str:
    raise Unwritable()


def _null(_value: Any) -> str:
    return "null"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _quoted_int(value: int) -> str:
    return f'"{value}"'


def _base64(value: bytes) -> str:
    return '"' + base64.b64encode(value).decode("ascii") + '"'
