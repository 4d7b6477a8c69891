"""Builds the gRPC request of a route from an HTTP request: body → path → query.

The order is grpc-gateway's: the body is decoded first, then path variables are set
(a path value overwrites the same field of the body), then query parameters fill the
fields bound by neither. With ``body: "*"`` the query is ignored, as in grpc-gateway.

Query names are dotted field paths with proto, json_name or lowerCamel names at every
level; repeated fields take repeated keys (``?tag=a&tag=b``); enums take a name (any
case) or a number; a singular field given twice is 400. Unknown keys are ignored.

A path variable that names no request field becomes request metadata named after the
variable (``agent_name`` → ``agent-name``); see :mod:`gateway.transcoder.routes`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from gateway.host.errors import bad_request
from gateway.transcoder.marshal import INT_TYPES, MessageCodec, decode_body
from gateway.transcoder.routes import Route, resolve_field_path
from neuro_san.core.errors import clip, echo

_PRINTABLE_ASCII = re.compile(r"^[\x20-\x7e]+$")
_TRUE = frozenset({"true", "1", "t", "yes"})
_FALSE = frozenset({"false", "0", "f", "no"})


class RequestBinder:
    """Turns (body, path captures, query) into a request message plus metadata."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.codec = MessageCodec(route.request_class)
        self._body_field = route.body if route.body not in ("", "*") else ""
        self._query_allowed = route.body != "*"

    def bind(
        self,
        body: bytes,
        captures: dict[str, str],
        query: Iterable[tuple[str, str]],
    ) -> tuple[Message, list[tuple[str, str]]]:
        message = self.route.request_class()
        if self.route.body == "*":
            data = self.codec.parse_body(body)
            if data:
                self.codec.fill(self.codec.normalize(data), message)
        elif self._body_field:
            self._bind_body_field(body, message)
        metadata: list[tuple[str, str]] = []
        for binding in self.route.path_bindings:
            value = captures[binding.variable]
            if binding.metadata_key:
                if not _PRINTABLE_ASCII.match(value):
                    # gRPC metadata cannot carry it (the call would fail outright).
                    raise bad_request(f"'{binding.variable}' must be printable ASCII", binding.variable)
                metadata.append((binding.metadata_key, value))
            else:
                set_field_path(message, binding.field_path, [value], binding.variable)
        if self._query_allowed:
            self._bind_query(message, query)
        return message, metadata

    def _bind_body_field(self, body: bytes, message: Message) -> None:
        if not body.strip():
            return
        value: Any = decode_body(body)
        data = self.codec.normalize({self._body_field: value})
        self.codec.fill(data, message)

    def _bind_query(self, message: Message, query: Iterable[tuple[str, str]]) -> None:
        grouped: dict[str, list[str]] = {}
        for key, value in query:
            grouped.setdefault(key, []).append(value)
        descriptor = message.DESCRIPTOR
        for key, values in grouped.items():
            path = resolve_field_path(descriptor, key.split("."))
            if path is None:
                continue  # unknown query parameters are ignored
            dotted = ".".join(fd.name for fd in path)
            if any(
                dotted == bound or dotted.startswith(bound + ".")
                for bound in self.route.bound_fields
            ):
                continue
            set_field_path(message, tuple(path), values, key)


def set_field_path(
    message: Message, path: tuple[FieldDescriptor, ...], values: list[str], name: str
) -> None:
    """Set a scalar (or repeated scalar) field at the end of ``path`` from strings."""
    target = message
    for fd in path[:-1]:
        if fd.is_repeated:
            raise bad_request(f"'{clip(name)}' goes through a repeated field", name)
        target = getattr(target, fd.name)
    leaf = path[-1]
    if leaf.type == FieldDescriptor.TYPE_MESSAGE:
        raise bad_request(f"'{clip(name)}' names a message; name one of its fields", name)
    if leaf.is_repeated:
        getattr(target, leaf.name).extend(convert_scalar(leaf, v, name) for v in values)
        return
    if len(values) > 1:
        raise bad_request(f"too many values for '{clip(name)}'", name)
    setattr(target, leaf.name, convert_scalar(leaf, values[0], name))


def convert_scalar(fd: FieldDescriptor, text: str, name: str) -> Any:
    """A path or query string as the Python value of a scalar field."""
    kind = fd.type
    try:
        if kind == FieldDescriptor.TYPE_STRING:
            return text
        if kind in INT_TYPES:
            return int(text)
        if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return float(text)
        if kind == FieldDescriptor.TYPE_BOOL:
            lowered = text.lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError(text)
        if kind == FieldDescriptor.TYPE_BYTES:
            padded = text + "=" * (-len(text) % 4)
            return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        if kind == FieldDescriptor.TYPE_ENUM:
            enum_value = fd.enum_type.values_by_name.get(text.upper())
            if enum_value is not None:
                return enum_value.number
            if not text.lstrip("-").isdigit():
                return 0  # an unknown name reads as the enum's zero value
            number = int(text)
            return number if number in fd.enum_type.values_by_number else 0
    except (ValueError, binascii.Error):
        raise bad_request(f"invalid value {echo(text)} for '{clip(name)}'", name) from None
    raise bad_request(f"'{clip(name)}' cannot be set from the URL", name)
