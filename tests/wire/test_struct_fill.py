"""``fill_struct`` (neuro_san/wire/convert.py) builds the Struct protobuf's ``Struct.update``
builds, for any JSON value and for the values only protobuf's rules decide (None, an
IntEnum, a tuple, a Struct, a number too large for a double), failures included."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from google.protobuf import struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from neuro_san.wire.convert import fill_struct


class Level(enum.IntEnum):
    HIGH = 3


_ODD = st.sampled_from([Level.HIGH, (1, "two"), struct_pb2.Struct(), struct_pb2.ListValue()])
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5) | _ODD,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _protobufs(data: dict[str, Any]) -> struct_pb2.Struct | str:
    struct = struct_pb2.Struct()
    try:
        struct.update(data)
    except Exception as error:  # noqa: BLE001 - the failure is what is compared
        return repr(error)
    return struct


def _ours(data: dict[str, Any]) -> struct_pb2.Struct | str:
    struct = struct_pb2.Struct()
    try:
        fill_struct(struct, data)
    except Exception as error:  # noqa: BLE001
        return repr(error)
    return struct


@given(st.dictionaries(st.text(max_size=4), _VALUES, max_size=4))
def test_fill_struct_builds_what_protobuf_builds(data: dict[str, Any]) -> None:
    expected = _protobufs(data)
    if isinstance(expected, str):
        return  # protobuf refuses it: fill_struct's JSON fallback decides (the test below)
    ours = _ours(data)
    assert ours == expected
    assert ours.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)


@pytest.mark.parametrize("data", [{"a": {}}, {"a": []}, {"a": [{}, []]}, {"n": None}])
def test_an_empty_container_is_set_not_missing(data: dict[str, Any]) -> None:
    ours = _ours(data)
    assert isinstance(ours, struct_pb2.Struct)
    assert ours == _protobufs(data)
    assert ours.fields["a" if "a" in data else "n"].WhichOneof("kind") is not None


def test_what_protobuf_refuses_goes_through_json() -> None:
    ours = _ours({"when": {1, 2}, "ok": 1})  # a set: protobuf refuses it, JSON takes its text
    assert isinstance(ours, struct_pb2.Struct)
    assert ours.fields["ok"].number_value == 1
    assert ours.fields["when"].string_value == "{1, 2}"
    assert _ours({"big": 10**400}) == "OverflowError('int too large to convert to float')"
