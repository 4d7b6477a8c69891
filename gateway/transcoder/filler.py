"""Normalised request JSON into a message without ``json_format.ParseDict`` where that is
plainly the same thing: compiled per message type, like :mod:`gateway.transcoder.printer`.

``ParseDict`` decides for every key what kind of field it names and how to convert the
value, through Python calls on the descriptor (~80 µs for a one-line chat request). After
``MessageCodec.normalize`` the keys are proto names and the values have the right JSON
shape, so most fields are one ``setattr``. Where a value needs one of ``ParseDict``'s
conversions the filler does not copy, it gives up (:class:`NotHere`), and the caller clears
the message and runs ``ParseDict`` on the whole body: the result, or the error a client
sees, is then ``ParseDict``'s by construction. It gives up on: an integer given as a float
or a string, bytes (base64), float and double fields, maps, well-known types other than
Struct, Value and ListValue (which ``ParseDict`` fills, field by field), and message types
with a oneof (``ParseDict`` refuses two of its members; ``setattr`` would keep the last).
``tests/gateway/transcoder/test_filler.py`` checks both ways agree on generated bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

Filler = Callable[[dict[str, Any], Message], None]

_STRUCTS = frozenset({"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"})
#: Fields whose normalised values are already of the one Python type protobuf takes as is.
_DIRECT = frozenset({FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_ENUM})
_INTEGERS = frozenset(
    {
        FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_FIXED64,
    }
)  # fmt: skip


class NotHere(Exception):
    """The body needs one of ``ParseDict``'s conversions: let it do the whole body."""


def filler_for(descriptor: Descriptor, memo: dict[str, Filler] | None = None) -> Filler:
    """The filler of ``descriptor``'s messages (built once; message types may recurse)."""
    memo = {} if memo is None else memo
    existing = memo.get(descriptor.full_name)
    if existing is not None:
        return existing
    if any(len(oneof.fields) > 1 for oneof in descriptor.oneofs):
        memo[descriptor.full_name] = _not_here  # (a oneof of one, as proto3 `optional` makes, is harmless)
        return _not_here
    fields: dict[str, Callable[[Message, Any], None]] = {}
    filler = _Fields(fields)
    memo[descriptor.full_name] = filler  # registered first: a field may be of this type
    for fd in descriptor.fields:
        fields[fd.name] = _setter(fd, memo)
    return filler


class _Fields:
    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Callable[[Message, Any], None]]) -> None:
        self._fields = fields

    def __call__(self, data: dict[str, Any], message: Message) -> None:
        fields = self._fields
        for name, value in data.items():
            fields[name](message, value)


def _not_here(_data: Any, _message: Any) -> None:
    raise NotHere


def _setter(fd: FieldDescriptor, memo: dict[str, Filler]) -> Callable[[Message, Any], None]:
    name = fd.name
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        sub = fd.message_type
        if sub.GetOptions().map_entry:
            return _not_here
        if sub.full_name in _STRUCTS:
            return _struct_setter(name, fd.is_repeated)
        if sub.full_name.startswith("google.protobuf."):
            return _not_here
        fill = filler_for(sub, memo)
        if fd.is_repeated:

            def add_all(message: Message, items: list[dict[str, Any]]) -> None:
                target = getattr(message, name)
                for item in items:
                    fill(item, target.add())

            return add_all

        def set_message(message: Message, value: dict[str, Any]) -> None:
            target = getattr(message, name)
            target.SetInParent()  # present even when empty, as ParseDict makes it
            fill(value, target)

        return set_message
    if fd.type in _DIRECT:
        if fd.is_repeated:
            return lambda message, values: getattr(message, name).extend(values)
        return lambda message, value: setattr(message, name, value)
    if fd.type in _INTEGERS:
        if fd.is_repeated:

            def extend_integers(message: Message, values: list[Any]) -> None:
                if any(type(value) is not int for value in values):
                    raise NotHere
                getattr(message, name).extend(values)  # out of range: ValueError, ParseDict says it

            return extend_integers

        def set_integer(message: Message, value: Any) -> None:
            if type(value) is not int:
                raise NotHere
            setattr(message, name, value)

        return set_integer
    return _not_here  # bytes (base64), float and double


def _struct_setter(name: str, repeated: bool) -> Callable[[Message, Any], None]:
    def set_struct(message: Message, value: Any) -> None:
        target = getattr(message, name)
        for item in value if repeated else (value,):
            json_format.ParseDict(item, target.add() if repeated else target)

    return set_struct
