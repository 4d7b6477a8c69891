"""The JSON writer (gateway/transcoder/json_writer.py) writes the very bytes of
``dumps(MessageCodec.to_dict(message))``, for generated messages of every type in our API's
files and of a type with every kind of field, and hands what it does not write to the
dict path."""

from __future__ import annotations

from google.protobuf import message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neuro_san.api.grpc import agent_pb2, chat_pb2

from gateway.host.responses import dumps
from gateway.transcoder.json_writer import Unwritable, writer_for
from gateway.transcoder.marshal import MessageCodec
from tests.gateway.transcoder.test_printer import KINDS, TYPES, _fill


def _class(descriptor: object) -> type:
    return KINDS if descriptor is KINDS.DESCRIPTOR else message_factory.GetMessageClass(descriptor)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_it_writes_what_the_dict_path_writes(data: st.DataObject) -> None:
    descriptor = data.draw(st.sampled_from(TYPES))
    cls = _class(descriptor)
    message = data.draw(_fill(cls(), depth=2))
    codec = MessageCodec(cls)
    assert codec.to_json(message) == dumps(codec.to_dict(message))


@settings(max_examples=200, deadline=None)
@given(st.text(), st.lists(st.tuples(st.text(max_size=6), st.integers(0, 2**31 - 1)), max_size=3),
       st.sampled_from(list(chat_pb2.ChatMessage.ChatMessageType.values())), st.booleans())
def test_a_token_delta_line_is_written_directly_and_the_same(
    text: str, origins: list[tuple[str, int]], kind: int, reasoning: bool
) -> None:
    """The streamed line of every delta: any text (escapes, non-ASCII, control characters)."""
    response = agent_pb2.ChatResponse()
    response.response.type = kind  # type: ignore[assignment]
    response.response.text = text
    for tool, index in origins:
        response.response.origin.add(tool=tool, instantiation_index=index)
    if reasoning:
        response.response.delta_kind = chat_pb2.ChatMessage.REASONING
    codec = MessageCodec(agent_pb2.ChatResponse)
    written = writer_for(agent_pb2.ChatResponse.DESCRIPTOR)(response)  # never the dict path
    assert written.encode("utf-8") == codec.to_json(response) == dumps(codec.to_dict(response))


def test_what_it_does_not_write_goes_the_dict_way() -> None:
    response = agent_pb2.ChatResponse()
    response.response.structure.update({"n": 10, "x": 1.5})  # a Struct: whole numbers as ints
    try:
        writer_for(agent_pb2.ChatResponse.DESCRIPTOR)(response)
        raise AssertionError("a Struct was written directly")
    except Unwritable:
        pass
    codec = MessageCodec(agent_pb2.ChatResponse)
    line = codec.to_json(response)
    assert line == dumps(codec.to_dict(response)) and b'"n":10' in line and line.endswith(b',"text":""}}')
