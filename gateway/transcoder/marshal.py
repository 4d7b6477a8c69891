"""JSON ⇄ protobuf for the gateway, with the choices of SPEC §5 made on purpose.

Out: proto (snake_case) names, enum names, empty fields omitted, compact separators,
UTF-8 kept as is; ``MessageToDict``'s dict, built by a printer compiled per type
(gateway/transcoder/printer.py). ``json_format`` renders every ``Struct`` number as a float, so whole
numbers inside Struct/Value/ListValue fields are turned back into ints (``10`` not
``10.0``). Only the places where a Struct can occur are visited: a *plan* per message
type, computed once from the descriptors, lists the keys to follow.

In: a descriptor-driven pass over the decoded JSON, before it fills the message (by the
compiled filler, gateway/transcoder/filler.py, or ``json_format.ParseDict``),
which (1) accepts proto, json_name and lowerCamel keys, (2) reads enum names in any case
or numbers, an unknown one as the enum's zero value, (3) rejects values of the wrong
shape with the field's path. Unknown fields are ignored. Filling does the rest; if
``ParseDict`` still fails, only a short reason and the field path reach the client, never
protobuf's dump of every field name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from gateway.host.errors import GatewayError, bad_request
from gateway.host.json_body import MalformedJson, decode_json
from gateway.host.responses import dumps
from gateway.transcoder.filler import filler_for
from gateway.transcoder.json_writer import Unwritable, writer_for
from gateway.transcoder.present_fields import add_present_fields, presence_plan
from gateway.transcoder.printer import print_struct, printable_here, printer_for, whole_numbers_to_int

_STRUCT_TYPES = frozenset(
    {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
)
#: The integer field types (shared with the binder's query-parameter parsing).
INT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_FLOAT_TYPES = frozenset({FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE})
_PARSE_FIELD = re.compile(r"Failed to parse (\S+) field")
_PARSE_AT = re.compile(r" at ([\w.\[\]]+?)\.*$")


def struct_json(struct: Message) -> dict[str, Any]:
    """A ``google.protobuf.Struct`` field's JSON form, as :meth:`MessageCodec.to_dict` gives
    it (whole numbers as ints): for a reader of one field, without the whole message's dict."""
    return whole_numbers_to_int(print_struct(struct))  # type: ignore[no-any-return]


# A plan maps a JSON key to None (a Struct-like value: fix it) or to the plan of a
# nested message that may contain one.
_Plan = dict[str, "_Plan | None"]


def _struct_plan(descriptor: Descriptor, memo: dict[str, _Plan]) -> _Plan:
    existing = memo.get(descriptor.full_name)
    if existing is not None:
        return existing
    plan: _Plan = {}
    memo[descriptor.full_name] = plan  # registered first: message types can recurse
    for name, sub in _message_fields(descriptor):
        plan[name] = None if sub.full_name in _STRUCT_TYPES else _struct_plan(sub, memo)
    return plan


def _message_fields(descriptor: Descriptor) -> list[tuple[str, Descriptor]]:
    """(field name, message type) of each message-typed field, a map's value type for a map."""
    fields = []
    for fd in descriptor.fields:
        if fd.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        sub = fd.message_type
        if sub.GetOptions().map_entry:
            value_fd = sub.fields_by_name["value"]
            if value_fd.type != FieldDescriptor.TYPE_MESSAGE:
                continue
            sub = value_fd.message_type
        fields.append((fd.name, sub))
    return fields


def _json_format_plan(descriptor: Descriptor) -> _Plan:
    """The plan of what the compiled printer leaves to ``json_format`` (which prints Struct
    numbers as floats): the Struct-bearing messages it prints whole, and the way to them.
    The Structs the printer prints itself come out with whole numbers already
    (``printer_for(whole_numbers=True)``). Empty for every message type of our API."""
    nodes: dict[str, Descriptor] = {}
    pending = [descriptor]
    while pending:  # every message type a message of this one may hold
        node = pending.pop()
        if node.full_name in nodes or node.full_name in _STRUCT_TYPES:
            continue
        nodes[node.full_name] = node
        pending.extend(sub for _, sub in _message_fields(node))
    full: dict[str, _Plan] = {}
    need = {name for name, node in nodes.items() if not printable_here(node) and _has_struct(_struct_plan(node, full))}
    grew = True
    while grew:  # and every type from which one of those is reachable
        grew = False
        for name, node in nodes.items():
            if name not in need and any(sub.full_name in need for _, sub in _message_fields(node)):
                need.add(name)
                grew = True

    def plan_of(node: Descriptor, memo: dict[str, _Plan]) -> _Plan:
        if not printable_here(node):
            return _struct_plan(node, full)
        existing = memo.get(node.full_name)
        if existing is not None:
            return existing
        plan: _Plan = {}
        memo[node.full_name] = plan  # registered first: message types can recurse
        for name, sub in _message_fields(node):
            if sub.full_name in need:
                plan[name] = plan_of(sub, memo)
        return plan

    return plan_of(descriptor, {}) if descriptor.full_name in need else {}


def _has_struct(plan: _Plan, seen: set[int] | None = None) -> bool:
    seen = set() if seen is None else seen
    if id(plan) in seen:
        return False
    seen.add(id(plan))
    return any(sub is None or _has_struct(sub, seen) for sub in plan.values())


def _apply_plan(data: dict[str, Any], plan: _Plan) -> None:
    for key, sub in plan.items():
        value = data.get(key)
        if value is None:
            continue
        if sub is None:
            data[key] = whole_numbers_to_int(value)
        elif type(value) is list:
            for item in value:
                if type(item) is dict:
                    _apply_plan(item, sub)
        elif type(value) is dict:
            if sub:
                _apply_plan(value, sub)


@dataclass(slots=True)
class _FieldIn:
    """How to check and normalise one field of incoming JSON."""

    name: str
    descriptor: FieldDescriptor
    repeated: bool
    is_map: bool
    message: _MessageIn | None = None  # a nested message to walk
    enum: dict[str, int] | None = None  # upper-case name → number
    enum_numbers: frozenset[int] = frozenset()
    struct: str = ""  # full name when the field is a Struct/Value/ListValue


@dataclass(slots=True)
class _MessageIn:
    fields: dict[str, _FieldIn] = field(default_factory=dict)


def _input_plan(descriptor: Descriptor, memo: dict[str, _MessageIn]) -> _MessageIn:
    existing = memo.get(descriptor.full_name)
    if existing is not None:
        return existing
    plan = _MessageIn()
    memo[descriptor.full_name] = plan
    for fd in descriptor.fields:
        info = _field_in(fd, memo)
        for alias in (fd.name, fd.json_name, _camel(fd.name)):
            plan.fields.setdefault(alias, info)
    return plan


def _field_in(fd: FieldDescriptor, memo: dict[str, _MessageIn]) -> _FieldIn:
    target = fd
    is_map = bool(
        fd.type == FieldDescriptor.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry
    )
    if is_map:
        target = fd.message_type.fields_by_name["value"]
    info = _FieldIn(fd.name, target, repeated=fd.is_repeated and not is_map, is_map=is_map)
    if target.type == FieldDescriptor.TYPE_MESSAGE:
        full_name = target.message_type.full_name
        if full_name in _STRUCT_TYPES:
            info.struct = full_name
        elif not full_name.startswith("google.protobuf."):
            info.message = _input_plan(target.message_type, memo)
    elif target.type == FieldDescriptor.TYPE_ENUM:
        info.enum, info.enum_numbers = _enum_tables(target.enum_type)
    return info


def _enum_tables(enum: EnumDescriptor) -> tuple[dict[str, int], frozenset[int]]:
    names = {value.name.upper(): value.number for value in enum.values}
    return names, frozenset(names.values())


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", int: "a number", float: "a number",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


class MessageCodec:
    """JSON ⇄ one message type. Built once per type, at start-up."""

    def __init__(self, message_class: type[Message]) -> None:
        self.message_class = message_class
        descriptor = message_class.DESCRIPTOR
        # Struct numbers come out whole where the printer prints them; the plan is for the rest.
        self._print = printer_for(descriptor, whole_numbers=True)
        self._write = writer_for(descriptor)
        self._fill = filler_for(descriptor)
        self._out_plan = _json_format_plan(descriptor)
        self._in_plan = _input_plan(descriptor, {})
        self._present = presence_plan(descriptor)

    # ---- out -----------------------------------------------------------------------
    def to_dict(self, message: Message) -> dict[str, Any]:
        data: dict[str, Any] = self._print(message)  # MessageToDict's dict, compiled per type
        if self._out_plan:
            _apply_plan(data, self._out_plan)
        if self._present:
            add_present_fields(data, self._present)
        return data

    def to_json(self, message: Message) -> bytes:
        """``dumps(to_dict(message))``: written straight from the fields where it can
        (json_writer.py; a streamed token's line, every delta), else by way of the dict."""
        try:
            return self._write(message).encode("utf-8", "replace")
        except Unwritable:
            return dumps(self.to_dict(message))

    # ---- in ------------------------------------------------------------------------
    def parse_body(self, raw: bytes) -> dict[str, Any]:
        """Decode a request body into a JSON object (empty body → ``{}``)."""
        if not raw.strip():
            return {}
        data = decode_body(raw)
        if not isinstance(data, dict):
            raise bad_request(
                f"request body must be a JSON object, not {_type_name(data)}", "body"
            )
        return data

    def normalize(self, data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        """Check shapes and normalise names and enums of a JSON object for this type."""
        try:
            return _normalize_message(data, self._in_plan, prefix)
        except RecursionError:
            raise bad_request("request body is nested too deeply", "body") from None

    def fill(self, data: dict[str, Any], message: Message) -> None:
        """A normalised object into the fresh ``message``: by the compiled filler where it
        can, else (or on any doubt) by ParseDict from scratch, with short errors."""
        try:
            self._fill(data, message)
            return
        except Exception:  # NotHere, or a value setattr refused: ParseDict has the last word
            message.Clear()
        self.fill_by_protobuf(data, message)

    def fill_by_protobuf(self, data: dict[str, Any], message: Message) -> None:
        """ParseDict a normalised object into ``message``, with short errors."""
        try:
            json_format.ParseDict(data, message, ignore_unknown_fields=True)
        except json_format.ParseError as error:
            raise _short_parse_error(str(error)) from None
        except RecursionError:
            raise bad_request("request body is nested too deeply", "body") from None


def _normalize_message(data: dict[str, Any], plan: _MessageIn, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        info = plan.fields.get(key)
        if info is None:
            continue  # unknown fields are ignored
        where = f"{path}.{info.name}" if path else info.name
        if value is None:
            out.pop(info.name, None)
            continue
        if info.repeated:
            if type(value) is not list:
                raise _wrong_type(where, "an array", value)
            out[info.name] = [
                _normalize_value(item, info, f"{where}[{index}]")
                for index, item in enumerate(value)
            ]
        elif info.is_map:
            if type(value) is not dict:
                raise _wrong_type(where, "an object", value)
            out[info.name] = {
                k: _normalize_value(item, info, f"{where}[{k}]") for k, item in value.items()
            }
        else:
            out[info.name] = _normalize_value(value, info, where)
    return out


def _normalize_value(value: Any, info: _FieldIn, where: str) -> Any:
    if info.message is not None:
        if type(value) is not dict:
            raise _wrong_type(where, "an object", value)
        return _normalize_message(value, info.message, where)
    if info.enum is not None:
        return _normalize_enum(value, info, where)
    if info.struct:
        if info.struct == "google.protobuf.Struct" and type(value) is not dict:
            raise _wrong_type(where, "an object", value)
        if info.struct == "google.protobuf.ListValue" and type(value) is not list:
            raise _wrong_type(where, "an array", value)
        return value
    kind = info.descriptor.type
    if kind == FieldDescriptor.TYPE_STRING or kind == FieldDescriptor.TYPE_BYTES:
        if type(value) is not str:
            raise _wrong_type(where, "a string", value)
    elif kind == FieldDescriptor.TYPE_BOOL:
        if type(value) is not bool:
            raise _wrong_type(where, "a boolean", value)
    elif kind in INT_TYPES or kind in _FLOAT_TYPES:
        if type(value) not in (int, float, str):
            raise _wrong_type(where, "a number", value)
    return value


def _normalize_enum(value: Any, info: _FieldIn, where: str) -> int:
    assert info.enum is not None
    if type(value) is str:
        number = info.enum.get(value.upper())
        if number is None:
            stripped = value.strip()
            if stripped.lstrip("-").isdigit():
                number = int(stripped)
                return number if number in info.enum_numbers else 0
            return 0  # an unknown name reads as the enum's zero value
        return number
    if type(value) is int:
        return value if value in info.enum_numbers else 0
    raise _wrong_type(where, "an enum name or number", value)


def _wrong_type(where: str, expected: str, value: Any) -> GatewayError:
    return bad_request(
        f"invalid value for field '{where}': expected {expected}, got {_type_name(value)}",
        where,
        f"expected {expected}, got {_type_name(value)}",
    )


def _short_parse_error(text: str) -> GatewayError:
    """A ParseError as a short message naming the field; the reason without the dump."""
    reason = text.rsplit("field: ", 1)[-1].strip()
    located = _PARSE_AT.search(reason)
    if located is not None and "." in located.group(1):
        where = located.group(1).split(".", 1)[1]  # drop the message type's name
    else:
        where = ".".join(_PARSE_FIELD.findall(text)) or "body"
    reason = _PARSE_AT.sub("", reason).rstrip(".")
    if "Available Fields" in reason or len(reason) > 200:
        reason = "invalid value"
    return bad_request(f"invalid value for field '{where}': {reason}", where, reason)


def decode_body(raw: bytes) -> Any:
    """A request body as JSON (gateway/host/json_body.py's one decoder), or 400 naming why."""
    try:
        return decode_json(raw)
    except MalformedJson as error:
        raise bad_request(f"request body is malformed: {error}", "body") from None
