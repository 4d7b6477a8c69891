"""The compiled printer (gateway/transcoder/printer.py) prints what protobuf's
``MessageToDict(..., preserving_proto_field_name=True)`` prints, for generated messages of
every type in our API's files, and of a type with every kind of field it handles itself;
key order included (the dicts become the wire's JSON text)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neuro_san.api.grpc import agent_pb2, concierge_pb2

from gateway.transcoder.printer import printer_for, protobuf_printer

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40).map(float) | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _scalar(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    if fd.type in _INT_RANGES:
        low, high = _INT_RANGES[fd.type]
        return st.integers(low, high)
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if fd.type == FieldDescriptor.TYPE_STRING:
        return st.text(max_size=8)
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=8)
    if fd.type == FieldDescriptor.TYPE_ENUM:
        # An open enum's unknown number too: it prints as a number.
        return st.sampled_from([value.number for value in fd.enum_type.values] + [77])
    if fd.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats(width=32 if fd.type == FieldDescriptor.TYPE_FLOAT else 64)
    raise AssertionError(f"no strategy for {fd.full_name}")


@st.composite
def _fill(draw: st.DrawFn, message: Message, depth: int) -> Message:
    for fd in message.DESCRIPTOR.fields:
        if not draw(st.booleans()):
            continue
        target = getattr(message, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            key_fd, value_fd = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
            for key in draw(st.lists(_scalar(key_fd), max_size=3)):
                if value_fd.message_type is not None:
                    if depth > 0:
                        draw(_fill(target[key], depth - 1))
                else:
                    target[key] = draw(_scalar(value_fd))
        elif fd.message_type is not None:
            items: list[dict[str, Any] | None]
            if fd.message_type.full_name == "google.protobuf.Struct":
                items = [draw(st.dictionaries(st.text(max_size=4), _JSON, max_size=3))]
            else:
                items = [None] * draw(st.integers(0, 2 if fd.is_repeated else 1)) if depth > 0 else []
            for item in items:
                sub = target.add() if fd.is_repeated else target
                if isinstance(sub, struct_pb2.Struct):
                    sub.update(item)
                else:
                    draw(_fill(sub, depth - 1))
                    if not fd.is_repeated:
                        sub.SetInParent()  # present, possibly empty
        elif fd.is_repeated:
            target.extend(draw(st.lists(_scalar(fd), max_size=3)))
        else:
            setattr(message, fd.name, draw(_scalar(fd)))
    return message


def _all_types() -> list[Descriptor]:
    found: dict[str, Descriptor] = {}

    def walk(descriptor: Descriptor) -> None:
        if descriptor.full_name in found or descriptor.GetOptions().map_entry:
            return
        found[descriptor.full_name] = descriptor
        for fd in descriptor.fields:
            if fd.message_type is not None:
                walk(fd.message_type)

    for module in (agent_pb2, concierge_pb2):
        for descriptor in module.DESCRIPTOR.message_types_by_name.values():
            walk(descriptor)
    return [d for d in found.values() if not d.full_name.startswith("google.protobuf.")]


def _every_kind() -> type[Message]:
    """A type with each kind of field the compiled printer handles itself, and a float map
    (printed by protobuf whole)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(struct_pb2.DESCRIPTOR.serialized_pb))
    proto = descriptor_pb2.FileDescriptorProto(
        name="printer_kinds.proto", package="printer_test", syntax="proto3", dependency=["google/protobuf/struct.proto"]
    )
    proto.enum_type.add(name="Colour").value.add(name="NONE", number=0)
    proto.enum_type[0].value.add(name="RED", number=1)
    kinds = proto.message_type.add(name="Kinds")
    types = FieldDescriptor
    for number, (name, kind) in enumerate(
        [("s", types.TYPE_STRING), ("b", types.TYPE_BOOL), ("i32", types.TYPE_INT32), ("u32", types.TYPE_UINT32),
         ("i64", types.TYPE_INT64), ("u64", types.TYPE_UINT64), ("s64", types.TYPE_SINT64), ("f64", types.TYPE_FIXED64),
         ("raw", types.TYPE_BYTES)],
        start=1,
    ):  # fmt: skip
        kinds.field.add(name=name, number=number, type=kind, label=types.LABEL_OPTIONAL)
        kinds.field.add(name=f"many_{name}", number=100 + number, type=kind, label=types.LABEL_REPEATED)
    kinds.field.add(name="colour", number=20, type=types.TYPE_ENUM, type_name=".printer_test.Colour")
    kinds.field.add(name="child", number=21, type=types.TYPE_MESSAGE, type_name=".printer_test.Kinds")
    kinds.field.add(
        name="children", number=22, type=types.TYPE_MESSAGE, type_name=".printer_test.Kinds", label=types.LABEL_REPEATED
    )
    kinds.field.add(name="data", number=23, type=types.TYPE_MESSAGE, type_name=".google.protobuf.Struct")
    kinds.field.add(name="maybe", number=24, type=types.TYPE_STRING, proto3_optional=True, oneof_index=0)
    kinds.oneof_decl.add(name="_maybe")
    for number, (name, key, value) in enumerate(
        [("by_name", types.TYPE_STRING, types.TYPE_INT64), ("by_flag", types.TYPE_BOOL, types.TYPE_STRING),
         ("by_number", types.TYPE_INT32, types.TYPE_MESSAGE)],
        start=30,
    ):  # fmt: skip
        entry = kinds.nested_type.add(name=f"{name.title().replace('_', '')}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=key, label=types.LABEL_OPTIONAL)
        value_field = entry.field.add(name="value", number=2, type=value, label=types.LABEL_OPTIONAL)
        if value == types.TYPE_MESSAGE:
            value_field.type_name = ".printer_test.Kinds"
        kinds.field.add(
            name=name, number=number, type=types.TYPE_MESSAGE, label=types.LABEL_REPEATED,
            type_name=f".printer_test.Kinds.{entry.name}",
        )  # fmt: skip
    floats = proto.message_type.add(name="WithFloats")
    floats.field.add(name="ratio", number=1, type=types.TYPE_DOUBLE)
    floats.field.add(name="inner", number=2, type=types.TYPE_MESSAGE, type_name=".printer_test.Kinds")
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("printer_test.Kinds"))


KINDS = _every_kind()
TYPES = [*_all_types(), KINDS.DESCRIPTOR]


def test_the_api_types_are_all_covered() -> None:
    names = {descriptor.name for descriptor in TYPES}
    assert {"ChatResponse", "ChatMessage", "ChatContext", "FunctionResponse", "ConciergeResponse"} <= names


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_compiled_printer_prints_what_protobuf_prints(data: st.DataObject) -> None:
    descriptor = data.draw(st.sampled_from(TYPES))
    cls = KINDS if descriptor is KINDS.DESCRIPTOR else message_factory.GetMessageClass(descriptor)
    message = data.draw(_fill(cls(), depth=2))
    assert json.dumps(printer_for(descriptor)(message)) == json.dumps(protobuf_printer(message))


@given(st.dictionaries(st.text(max_size=4), _JSON, max_size=4))
def test_a_struct_prints_as_protobuf_prints_it(data: dict[str, Any]) -> None:
    struct = struct_pb2.Struct()
    struct.update(data)
    value = struct_pb2.Value(struct_value=struct)
    for message in (struct, value, value.struct_value, struct_pb2.Value(), struct_pb2.ListValue(values=[value])):
        printed = printer_for(message.DESCRIPTOR)(message)
        assert json.dumps(printed) == json.dumps(protobuf_printer(message))


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_number_json_cannot_hold_is_refused_as_protobuf_refuses_it(number: float) -> None:
    struct = struct_pb2.Struct()
    struct.update({"outer": {"n": number}})
    with pytest.raises(ValueError) as ours:
        printer_for(struct.DESCRIPTOR)(struct)
    with pytest.raises(ValueError) as protobufs:
        protobuf_printer(struct)
    assert str(ours.value) == str(protobufs.value)


def test_types_it_cannot_print_go_to_protobuf_whole() -> None:
    assert printer_for(struct_pb2.Struct.DESCRIPTOR) is not protobuf_printer  # printed here, as protobuf does
    with_floats = KINDS.DESCRIPTOR.file.message_types_by_name["WithFloats"]
    assert printer_for(with_floats) is protobuf_printer
    assert printer_for(KINDS.DESCRIPTOR) is not protobuf_printer
