"""``json_format.MessageToDict(message, preserving_proto_field_name=True)``, compiled per
message type: the same dict, built without protobuf's general-purpose printer.

protobuf's printer decides, for every field of every message it prints, what kind of field
it is (WKT, map, repeated, enum, 64-bit integer, bytes…) through Python calls on the
descriptor; an echo chat's answer cost ~120 µs to print that way, the largest single piece
of the gateway's own work per chat. Here those decisions are made once per message type, at
start-up, into one converter per field, so printing is a walk over ``ListFields()`` (the
fields present, in field-number order, as protobuf's printer walks them).

Struct, Value and ListValue (every ``structure`` and ``sly_data``) are converted here too, as
``json_format`` converts them: a Struct of a usage report took ~25 µs through protobuf's printer
and is read in a few here. What this module does not convert itself it hands to
``json_format`` whole, so the output stays protobuf's by construction: the other well-known
types (``google.protobuf.*``: Timestamp, wrappers, Any…), and any message with a float or double field (protobuf's
shortest-float and NaN/Infinity rules; map values included), a closed enum (protobuf raises on an unknown
number) or an extension. ``tests/gateway/transcoder/test_printer.py`` checks the two
printers agree on generated messages of every type the gateway prints.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

Convert = Callable[[Any], Any]
Printer = Callable[[Message], Any]

_INT64 = frozenset(
    {FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64}
)  # printed as strings (JSON numbers lose precision past 2**53)
_FLOATS = frozenset({FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE})
_MAX_SAFE_INT = 2**53


def protobuf_printer(message: Message) -> Any:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def printer_for(
    descriptor: Descriptor, memo: dict[str, Printer] | None = None, *, whole_numbers: bool = False
) -> Printer:
    """The printer of ``descriptor``'s messages (built once; message types may recurse).
    ``whole_numbers``: the Structs, Values and ListValues it prints itself give integral
    numbers as ints (:func:`whole_numbers_to_int`, REST's JSON form), so no second walk of
    the dict is needed for them; those inside what ``json_format`` prints stay floats."""
    if memo is None:
        memo = dict(_WHOLE_NUMBER_PRINTERS if whole_numbers else _STRUCT_PRINTERS)
    existing = memo.get(descriptor.full_name)
    if existing is not None:
        return existing
    if not printable_here(descriptor):
        memo[descriptor.full_name] = protobuf_printer
        return protobuf_printer
    fields: dict[int, tuple[str, Convert]] = {}
    compiled = _FieldWalk(fields)
    memo[descriptor.full_name] = compiled  # registered first: a field may be of this type
    for fd in descriptor.fields:
        fields[fd.number] = (fd.name, _field_converter(fd, memo))
    return compiled


class _FieldWalk:
    """A message's printer: each present field through its converter."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[int, tuple[str, Convert]]) -> None:
        self._fields = fields

    def __call__(self, message: Message) -> dict[str, Any]:
        fields = self._fields
        out: dict[str, Any] = {}
        for fd, value in message.ListFields():
            name, convert = fields[fd.number]
            out[name] = convert(value)
        return out


def printable_here(descriptor: Descriptor) -> bool:
    if descriptor.full_name.startswith("google.protobuf."):
        return False  # well-known types have JSON forms of their own
    if descriptor.extension_ranges:
        return False
    for fd in descriptor.fields:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            fd = fd.message_type.fields_by_name["value"]  # a map: its values' kind decides
        if fd.cpp_type in _FLOATS:
            return False
        if fd.enum_type is not None and fd.enum_type.is_closed:
            return False
    return True


def _field_converter(fd: FieldDescriptor, memo: dict[str, Printer]) -> Convert:
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        return _map_converter(fd, memo)
    one = _value_converter(fd, memo)
    if fd.is_repeated:
        if one is _same:
            return list
        return lambda values: [one(value) for value in values]
    return one


def _map_converter(fd: FieldDescriptor, memo: dict[str, Printer]) -> Convert:
    value = _value_converter(fd.message_type.fields_by_name["value"], memo)
    return lambda entries: {_map_key(key): value(item) for key, item in entries.items()}


def _map_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _value_converter(fd: FieldDescriptor, memo: dict[str, Printer]) -> Convert:
    if fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        return printer_for(fd.message_type, memo)
    if fd.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        if fd.enum_type.full_name == "google.protobuf.NullValue":
            return _none
        names = {value.number: value.name for value in fd.enum_type.values}
        return lambda number: names.get(number, number)  # an open enum's unknown number stays a number
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return _base64
    if fd.cpp_type in _INT64:
        return str
    return _same  # strings, booleans, 32-bit integers


def whole_numbers_to_int(value: Any) -> Any:
    """Integral floats inside a JSON value (from a Struct) become ints, in place."""
    kind = type(value)
    if kind is float:
        if value.is_integer() and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            return int(value)
        return value
    if kind is dict:
        for key, item in value.items():
            if type(item) in (float, dict, list):
                value[key] = whole_numbers_to_int(item)
    elif kind is list:
        for index, item in enumerate(value):
            if type(item) in (float, dict, list):
                value[index] = whole_numbers_to_int(item)
    return value


def _same(value: Any) -> Any:
    return value


def _none(_value: Any) -> None:
    return None


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("utf-8")


def print_struct(struct: Message) -> dict[str, Any]:
    """A ``google.protobuf.Struct`` as ``json_format`` prints it (numbers stay floats)."""
    return {key: print_value(value) for key, value in struct.fields.items()}  # type: ignore[attr-defined]


def print_list(values: Message) -> list[Any]:
    """A ``google.protobuf.ListValue`` as ``json_format`` prints it."""
    return [print_value(value) for value in values.values]  # type: ignore[attr-defined]


def print_value(value: Message) -> Any:
    """A ``google.protobuf.Value`` as ``json_format`` prints it: unset is null, and a NaN or
    infinite number raises ValueError (JSON has neither; protobuf refuses the same way)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value  # type: ignore[attr-defined]
    if kind == "number_value":
        number: float = value.number_value  # type: ignore[attr-defined]
        if math.isinf(number) or math.isnan(number):
            name = "Infinity" if math.isinf(number) else "NaN"
            raise ValueError(f"Fail to serialize {name} for Value.number_value, which would parse as string_value")
        return number
    if kind == "struct_value":
        return print_struct(value.struct_value)  # type: ignore[attr-defined]
    if kind == "bool_value":
        return value.bool_value  # type: ignore[attr-defined]
    if kind == "list_value":
        return print_list(value.list_value)  # type: ignore[attr-defined]
    return None  # null_value, or nothing set


_STRUCT_PRINTERS: dict[str, Printer] = {
    "google.protobuf.Struct": print_struct,
    "google.protobuf.Value": print_value,
    "google.protobuf.ListValue": print_list,
}
#: The same, integral numbers as ints.
_WHOLE_NUMBER_PRINTERS: dict[str, Printer] = {
    name: (lambda print_one: lambda value: whole_numbers_to_int(print_one(value)))(printer)
    for name, printer in _STRUCT_PRINTERS.items()
}
