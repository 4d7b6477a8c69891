"""``MessageCodec.to_dict`` (the compiled printer, its Structs printed with whole numbers, and
a plan only for what it leaves to ``json_format``) gives what protobuf's own printer gives
once every Struct's whole numbers are ints and the always-present fields are added: for
generated messages of every type of our API and of a type with every kind of field."""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.transcoder import marshal
from gateway.transcoder.marshal import MessageCodec
from gateway.transcoder.present_fields import add_present_fields, presence_plan
from gateway.transcoder.printer import protobuf_printer
from tests.gateway.transcoder.test_json_writer import _class
from tests.gateway.transcoder.test_printer import KINDS, TYPES, _fill

#: A type protobuf prints whole (a double field) holding Kinds, which holds a Struct.
_WITH_FLOATS = KINDS.DESCRIPTOR.file.message_types_by_name["WithFloats"]


def _reference(message: Any) -> Any:
    data = protobuf_printer(message)
    descriptor = message.DESCRIPTOR
    if descriptor.full_name in ("google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.Value"):
        return marshal.whole_numbers_to_int(data)
    marshal._apply_plan(data, marshal._struct_plan(descriptor, {}))
    add_present_fields(data, presence_plan(descriptor))
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_to_dict_is_protobufs_dict_with_whole_numbers(data: st.DataObject) -> None:
    cls = _class(data.draw(st.sampled_from([*TYPES, _WITH_FLOATS])))
    message = data.draw(_fill(cls(), depth=2))
    assert repr(MessageCodec(cls).to_dict(message)) == repr(_reference(message))  # 1 and 1.0 differ here


def test_a_struct_of_its_own_has_whole_numbers() -> None:
    struct = struct_pb2.Struct()
    struct.update({"n": 2, "x": 0.5, "deep": {"list": [3, {"m": 4}]}})
    printed = MessageCodec(struct_pb2.Struct).to_dict(struct)
    assert printed == {"n": 2, "x": 0.5, "deep": {"list": [3, {"m": 4}]}}
    assert type(printed["n"]) is int and type(printed["deep"]["list"][1]["m"]) is int
    assert repr(printed) == repr(_reference(struct))


def test_no_api_type_needs_a_second_walk() -> None:
    """What the docstring of ``_json_format_plan`` says: our API prints every Struct itself."""
    left = marshal._json_format_plan(_WITH_FLOATS)  # printed whole by protobuf: the full plan
    assert list(left) == ["inner"] and left["inner"]["data"] is None
    for descriptor in TYPES:
        if descriptor is not KINDS.DESCRIPTOR:
            assert marshal._json_format_plan(descriptor) == {}, descriptor.full_name
