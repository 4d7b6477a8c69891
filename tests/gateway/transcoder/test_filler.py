"""The compiled filler (gateway/transcoder/filler.py) gives the message, or the error, that
``ParseDict`` gives, for generated JSON bodies of every request type of our API and of a
type with the kinds of field it hands back to ``ParseDict``."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neuro_san.api.grpc import agent_pb2, concierge_pb2

from gateway.host.errors import GatewayError
from gateway.transcoder.filler import filler_for
from gateway.transcoder.marshal import MessageCodec

#: Any JSON value: what a client may send where a field expects something else.
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


def _right_value(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    if fd.type == FieldDescriptor.TYPE_STRING:
        return st.text(max_size=6)
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return st.sampled_from(["aGk=", "aGk", "!!", ""])
    if fd.type == FieldDescriptor.TYPE_ENUM:
        names = [value.name for value in fd.enum_type.values]
        return st.sampled_from([*names, *(n.lower() for n in names), 1, 99, "7", "nope"])
    if fd.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats() | st.sampled_from(["NaN", "1.5", "-Infinity"]) | st.integers(-10, 10)
    # integers, as a client may write them: numbers, whole floats, strings, out of range
    return st.integers(-100, 100) | st.integers(-(2**65), 2**65) | st.sampled_from([1.0, 2.5, "12", "x", -1])


@st.composite
def _body(draw: st.DrawFn, descriptor: Descriptor, depth: int) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for fd in descriptor.fields:
        if not draw(st.integers(0, 2)):
            continue
        key = draw(st.sampled_from([fd.name, fd.json_name]))
        if draw(st.integers(0, 9)) == 0:
            body[key] = draw(_ANY_JSON)  # the wrong shape now and then
            continue
        body[key] = draw(_value(fd, depth))
    return body


def _value(fd: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        key_fd, value_fd = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
        keys = st.text(max_size=3)
        if key_fd.type != FieldDescriptor.TYPE_STRING:
            keys = st.sampled_from(["a", "1", "true", "-3"])
        return st.dictionaries(keys, _single(value_fd, depth), max_size=2)
    one = _single(fd, depth)
    return st.lists(one, max_size=3) if fd.is_repeated else one


def _single(fd: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if fd.message_type is None:
        return _right_value(fd)
    if fd.message_type.full_name in ("google.protobuf.Struct", "google.protobuf.Value"):
        return st.dictionaries(st.text(max_size=3), _ANY_JSON, max_size=3)
    if depth <= 0:
        return st.just({})
    return _body(fd.message_type, depth - 1)


def _kinds() -> Descriptor:
    """Integers of each width, bytes, a double, a map, a Struct list; a oneof."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(struct_pb2.DESCRIPTOR.serialized_pb))
    proto = descriptor_pb2.FileDescriptorProto(
        name="filler_kinds.proto", package="filler_test", syntax="proto3", dependency=["google/protobuf/struct.proto"]
    )
    kinds = proto.message_type.add(name="Kinds")
    types = FieldDescriptor
    for number, (name, kind, label) in enumerate(
        [("i32", types.TYPE_INT32, types.LABEL_OPTIONAL), ("u64", types.TYPE_UINT64, types.LABEL_OPTIONAL),
         ("many", types.TYPE_SINT64, types.LABEL_REPEATED), ("raw", types.TYPE_BYTES, types.LABEL_OPTIONAL),
         ("ratio", types.TYPE_DOUBLE, types.LABEL_OPTIONAL), ("flag", types.TYPE_BOOL, types.LABEL_REPEATED)],
        start=1,
    ):  # fmt: skip
        kinds.field.add(name=name, number=number, type=kind, label=label)
    kinds.field.add(
        name="docs", number=12, type=types.TYPE_MESSAGE, type_name=".google.protobuf.Struct", label=types.LABEL_REPEATED
    )
    entry = kinds.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=types.TYPE_INT32)
    entry.field.add(name="value", number=2, type=types.TYPE_STRING)
    kinds.field.add(
        name="counts", number=13, type=types.TYPE_MESSAGE, type_name=".filler_test.Kinds.CountsEntry",
        label=types.LABEL_REPEATED,
    )  # fmt: skip
    choice = proto.message_type.add(name="Choice")  # alone: other kinds would hand the body back first
    choice.oneof_decl.add(name="choice")
    choice.field.add(name="left", number=1, type=types.TYPE_STRING, oneof_index=0)
    choice.field.add(name="right", number=2, type=types.TYPE_INT32, oneof_index=0)
    holder = proto.message_type.add(name="Holder")
    holder.field.add(name="kinds", number=1, type=types.TYPE_MESSAGE, type_name=".filler_test.Kinds")
    holder.field.add(name="name", number=2, type=types.TYPE_STRING)
    holder.field.add(name="count", number=3, type=types.TYPE_INT64, proto3_optional=True, oneof_index=0)
    holder.oneof_decl.add(name="_count")
    holder.field.add(name="choice", number=4, type=types.TYPE_MESSAGE, type_name=".filler_test.Choice")
    pool.Add(proto)
    return pool.FindMessageTypeByName("filler_test.Holder")


HOLDER = _kinds()
TYPES = [
    *(d for m in (agent_pb2, concierge_pb2) for d in m.DESCRIPTOR.message_types_by_name.values()),
    HOLDER,
    HOLDER.file.message_types_by_name["Choice"],
]
CODECS = {d.full_name: MessageCodec(message_factory.GetMessageClass(d)) for d in TYPES}


def _outcome(fill: Any, codec: MessageCodec, data: dict[str, Any]) -> tuple[str, Any]:
    message: Message = codec.message_class()
    try:
        fill(data, message)
    except GatewayError as error:
        return "error", error.message
    return "message", message


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_compiled_filler_fills_what_parse_dict_fills(data: st.DataObject) -> None:
    descriptor = data.draw(st.sampled_from(TYPES))
    codec = CODECS[descriptor.full_name]
    body = data.draw(_body(descriptor, depth=2))
    try:
        normalized = codec.normalize(body)
    except GatewayError:
        return  # refused before any filling, the same for both
    assert _outcome(codec.fill, codec, normalized) == _outcome(codec.fill_by_protobuf, codec, normalized)


def test_the_chat_request_is_filled_without_parse_dict() -> None:
    codec = CODECS["dev.cognizant_ai.neuro_san.api.grpc.agent.ChatRequest"]
    body = {
        "user_message": {"type": "human", "text": "hi"}, "sly_data": {"n": 1}, "chat_filter": {"chat_filter_type": 2}
    }  # fmt: skip
    message = agent_pb2.ChatRequest()
    filler_for(agent_pb2.ChatRequest.DESCRIPTOR)(codec.normalize(body), message)  # raises if it hands back
    assert message.user_message.text == "hi" and message.sly_data["n"] == 1
