"""The facade reads a response field by field (gateway/agents/invoked.py ``event_of``); what
each event holds is what the message's JSON form (REST's, ``MessageCodec.to_dict``) says, for
generated messages of every type: text, origins, structure and sly_data with whole numbers
as ints, the chat_context's JSON with its always-present fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from neuro_san.api.grpc import agent_pb2, chat_pb2

from gateway.agents.interface import Answer, AnswerDelta, ChatEvent, Step
from gateway.agents.invoked import event_of
from gateway.transcoder.marshal import MessageCodec

_CODEC = MessageCodec(chat_pb2.ChatMessage)
_Type = chat_pb2.ChatMessage
_STEPS = {_Type.AI, _Type.AGENT, _Type.AGENT_TOOL_RESULT, _Type.AGENT_PROGRESS}

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_OBJECTS = st.dictionaries(st.text(max_size=4), _JSON, max_size=3)
#: A tool call's "Received arguments:" / "Got result:" structures (runtime/journal_shapes.py),
#: and token reports (runtime/usage_report.py), which the facade reads as they are read.
_TOOL_SHAPES = st.fixed_dictionaries({"tool_start": st.booleans(), "tool_args": _JSON}) | st.fixed_dictionaries(
    {"tool_end": st.booleans(), "tool_output": _JSON}) | st.fixed_dictionaries(
    {"total_tokens": _JSON}, optional={"models": _OBJECTS, "caveats": st.lists(st.text(max_size=4), max_size=2),
                                       "tool_start": st.booleans(), "tool_args": _JSON})


@st.composite
def _responses(draw: st.DrawFn) -> agent_pb2.ChatResponse:
    message = chat_pb2.ChatMessage(type=draw(st.sampled_from(list(_Type.ChatMessageType.values()))),
                                   text=draw(st.text(max_size=6)))
    for _ in range(draw(st.integers(0, 3))):
        message.origin.add(tool=draw(st.text(max_size=4)), instantiation_index=draw(st.integers(0, 3)))
    for name in ("structure", "sly_data"):
        if draw(st.booleans()):
            getattr(message, name).update(draw(_OBJECTS | _TOOL_SHAPES))
    if draw(st.booleans()):
        history = message.chat_context.chat_histories.add()
        history.origin.add(tool=draw(st.text(max_size=4)))
        for _ in range(draw(st.integers(0, 2))):
            history.messages.add(type=_Type.AI, text=draw(st.text(max_size=4)))
    for _ in range(draw(st.integers(0, 2))):
        message.tool_result_origin.add(tool=draw(st.text(max_size=4)))
    message.delta_kind = draw(st.sampled_from([_Type.ANSWER, _Type.REASONING]))
    return agent_pb2.ChatResponse(response=message)


def _from_json(reply: agent_pb2.ChatResponse) -> ChatEvent | None:
    """The event as read from the message's JSON form (how the facade read it before)."""
    message = reply.response
    if message.type == _Type.TOKEN_DELTA:
        one = len(message.origin) == 1 and message.delta_kind == _Type.ANSWER and message.text
        return AnswerDelta(message.text) if one else None
    if message.type != _Type.AGENT_FRAMEWORK and message.type not in _STEPS:
        return None
    data = _CODEC.to_dict(message)
    if message.type == _Type.AGENT_FRAMEWORK:
        return Answer(data["text"], data.get("structure"), data.get("chat_context"), data.get("sly_data") or {})
    structure = data.get("structure")
    shapes: Mapping[str, Any] = structure if isinstance(structure, Mapping) else {}
    return Step(_Type.ChatMessageType.Name(message.type), tuple(o.get("tool", "") for o in data.get("origin", [])),
                data["text"], structure, shapes.get("tool_args") if shapes.get("tool_start") else None,
                shapes.get("tool_output") if shapes.get("tool_end") else None,
                tuple(o.get("tool", "") for o in data.get("tool_result_origin", [])))


def _plain(event: ChatEvent | None) -> ChatEvent | None:
    """``event`` with its Mappings read whole (a chat_context, a token report: read when read)."""
    if isinstance(event, Step) and isinstance(event.structure, Mapping):
        return dataclasses.replace(event, structure=dict(event.structure))
    if isinstance(event, Answer) and event.chat_context is not None:
        return dataclasses.replace(event, chat_context=dict(event.chat_context))
    return event


@given(_responses())
def test_an_event_holds_what_the_messages_json_says(reply: agent_pb2.ChatResponse) -> None:
    ours, expected = event_of(reply), _from_json(reply)
    assert ours == expected
    assert repr(_plain(ours)) == repr(expected)  # types too: 1 and 1.0 are equal, but 1.0 is no int


@given(_responses())
def test_a_read_when_read_mapping_reads_each_key_as_the_json_form(reply: agent_pb2.ChatResponse) -> None:
    """Key by key, in any order, twice, and absent keys too: the values of the JSON form."""
    ours, expected = event_of(reply), _from_json(reply)
    pairs = []
    if isinstance(ours, Step) and isinstance(expected, Step):
        pairs.append((ours.structure, expected.structure))
    if isinstance(ours, Answer) and isinstance(expected, Answer):
        pairs.append((ours.chat_context, expected.chat_context))
    for lazy, plain in pairs:
        if plain is None:
            assert lazy is None
            continue
        assert lazy is not None
        for key in [*reversed(list(plain)), *plain]:
            assert repr(lazy[key]) == repr(plain[key])
        assert lazy.get("\x00absent") is None and "\x00absent" not in lazy
        assert list(lazy) == list(plain) and len(lazy) == len(plain)


def test_a_whole_number_in_a_structure_is_an_int() -> None:
    message = chat_pb2.ChatMessage(type=_Type.AGENT_FRAMEWORK, text="done")
    message.structure.update({"total_tokens": 9, "ratio": 0.5, "nested": [{"n": 2}]})
    event = event_of(agent_pb2.ChatResponse(response=message))
    assert isinstance(event, Answer) and event.structure is not None
    assert event.structure == {"total_tokens": 9, "ratio": 0.5, "nested": [{"n": 2}]}
    assert type(event.structure["total_tokens"]) is int and type(event.structure["nested"][0]["n"]) is int
