"""The facade's answer event (gateway/agents/invoked.py ``event_of``) converts only an
answer's chat_context when that is all it carries besides its text; the event is the one
converting the whole message gives, for generated answers of every shape (with and without
structure, sly_data, chat_context, origins, empty and set-but-empty sub-messages)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neuro_san.api.grpc import agent_pb2, chat_pb2

from gateway.agents.interface import Answer
from gateway.agents.invoked import event_of
from gateway.transcoder.marshal import MessageCodec
from tests.gateway.transcoder.test_printer import _fill

_WHOLE = MessageCodec(chat_pb2.ChatMessage)


def _answer_of_the_whole_message(message: chat_pb2.ChatMessage) -> Answer:
    data = _WHOLE.to_dict(message)
    return Answer(str(data.get("text", "")), data.get("structure"), data.get("chat_context"),
                  data.get("sly_data") or {})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_an_answer_is_the_event_the_whole_message_gives(data: st.DataObject) -> None:
    reply = agent_pb2.ChatResponse()
    data.draw(_fill(reply.response, depth=3))
    reply.response.type = chat_pb2.ChatMessage.AGENT_FRAMEWORK
    assert event_of(reply) == _answer_of_the_whole_message(reply.response)


def test_a_plain_answer_takes_the_short_way_and_keeps_its_context() -> None:
    reply = agent_pb2.ChatResponse()
    reply.response.type = chat_pb2.ChatMessage.AGENT_FRAMEWORK
    reply.response.text = "hi"
    reply.response.origin.add(tool="echoer", instantiation_index=1)
    history = reply.response.chat_context.chat_histories.add()
    history.origin.add(tool="echoer")
    history.messages.add(type=chat_pb2.ChatMessage.HUMAN)  # no text: "text" is still there, as ""
    event = event_of(reply)
    assert event == _answer_of_the_whole_message(reply.response)
    assert isinstance(event, Answer) and event.chat_context == {
        "chat_histories": [{"origin": [{"tool": "echoer"}], "messages": [{"type": "HUMAN", "text": ""}]}]}
