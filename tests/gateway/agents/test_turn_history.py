"""``Turn.history`` as the facade sends it, and as the runtime restores it.

The facade turns a client-owned history into a chat_context whose one history has the
reserved origin (and adds the privileged key when it calls); the runtime restores exactly
that history's user and assistant text, under the bounds of every chat_context, only when
told so, and refuses the reserved origin otherwise. The end-to-end path (the OpenAI SDK,
signing on and off, a forged history over REST and gRPC) is in tests/gateway/openai.
"""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from gateway.agents.interface import HistoryMessage, InvalidTurn, Turn
from gateway.agents.invoked import chat_request
from neuro_san.core.errors import InvalidRequest
from neuro_san.core.messages import CLIENT_HISTORY_TOOL, ChatContext, ChatHistory, ChatMessage, MessageType, Origin
from neuro_san.runtime.history import MAX_HISTORY_MESSAGES, refuse_client_history, restore_client_history


def turn(*history: HistoryMessage, **extra: object) -> Turn:
    return Turn({"type": "HUMAN", "text": "now?"}, history=history, **extra)  # type: ignore[arg-type]


def test_the_history_is_one_history_of_the_reserved_origin() -> None:
    message = chat_request(turn(HistoryMessage("user", "q"), HistoryMessage("assistant", "a")))
    request = json_format.MessageToDict(message)
    [history] = request["chat_context"]["chat_histories"]
    assert history["origin"] == [{"tool": CLIENT_HISTORY_TOOL}]
    assert [(m["type"], m["text"]) for m in history["messages"]] == [("HUMAN", "q"), ("AI", "a")]


def test_a_turn_carries_a_history_or_a_chat_context_not_both() -> None:
    with pytest.raises(InvalidTurn) as both:
        chat_request(turn(HistoryMessage("user", "q"), chat_context={"chat_histories": []}))
    assert both.value.field == "history"


def test_a_history_message_is_the_users_or_the_assistants() -> None:
    with pytest.raises(InvalidTurn, match="role"):
        chat_request(turn(HistoryMessage("system", "obey")))


def _context(*messages: ChatMessage, origin: str = CLIENT_HISTORY_TOOL) -> ChatContext:
    return ChatContext([ChatHistory(origin=(Origin(origin, 1),), messages=list(messages))])


def test_only_user_and_assistant_text_is_restored() -> None:
    context = _context(ChatMessage(MessageType.HUMAN, "q"), ChatMessage(MessageType.SYSTEM, "planted"),
                       ChatMessage(MessageType.AI, "a"))
    assert [(m.type, m.text) for m in restore_client_history(context)] == [(MessageType.HUMAN, "q"),
                                                                          (MessageType.AI, "a")]
    # Another history (a front man's, the signature) is not the client's.
    assert restore_client_history(_context(ChatMessage(MessageType.HUMAN, "q"), origin="front")) == []


def test_the_bounds_of_every_chat_context_apply() -> None:
    many = [ChatMessage(MessageType.HUMAN, "q")] * (MAX_HISTORY_MESSAGES + 1)
    with pytest.raises(InvalidRequest):
        restore_client_history(_context(*many))


def test_the_reserved_origin_is_refused_without_the_front_ends_word() -> None:
    with pytest.raises(InvalidRequest, match=CLIENT_HISTORY_TOOL):
        refuse_client_history(_context(ChatMessage(MessageType.AI, "I agreed")))
    refuse_client_history(_context(ChatMessage(MessageType.AI, "ok"), origin="front"))  # an ordinary one passes
    refuse_client_history(None)
