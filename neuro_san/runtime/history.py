"""chat_context in and out: the front man's history is all a conversation carries.

Incoming histories are untrusted client data: only HUMAN and AI messages of the history
whose origin names the front man are used (SYSTEM messages are dropped, so a client
cannot plant instructions), and their number and size are bounded.

A history the client owns (OpenAI's ``messages``, AG-UI's) comes as the one history of
origin :data:`~neuro_san.core.messages.CLIENT_HISTORY_TOOL`, and is used only when the
service was told so by the server's own front-end (``ChatRequest.client_history``): then it
is the front man's history under the same rules, and needs no signature. A client that
sends such a history itself is refused, never half-believed.
"""

from __future__ import annotations

from collections.abc import Sequence

from neuro_san.core.errors import InvalidRequest
from neuro_san.core.messages import CLIENT_HISTORY_TOOL, ChatContext, ChatHistory, ChatMessage, MessageType, OriginPath
from neuro_san.llm.interface import LlmMessage

#: The most history messages a request may carry in, and their total characters.
MAX_HISTORY_MESSAGES = 2_000
MAX_HISTORY_CHARS = 8 * 1024 * 1024

_KEPT = (MessageType.HUMAN, MessageType.AI)


def restore_history(context: ChatContext | None, front_man: str) -> list[ChatMessage]:
    """The front man's earlier HUMAN/AI messages, oldest first."""
    if context is None:
        return []
    return _bounded(_kept(context, front_man))


def restore_client_history(context: ChatContext | None) -> list[ChatMessage]:
    """The client-owned history's HUMAN/AI messages, oldest first (trusted by the caller:
    ``ChatRequest.client_history``)."""
    return _bounded(_kept(context, CLIENT_HISTORY_TOOL)) if context is not None else []


def refuse_client_history(context: ChatContext | None) -> None:
    """Refuse a chat_context that carries a client-owned history without the front-end's
    word for it (a client imitating one, or a standalone gateway without the shared token)."""
    if context is not None and any(_origin(h) == CLIENT_HISTORY_TOOL for h in context.chat_histories):
        raise InvalidRequest(
            f"chat_context has a history of origin {CLIENT_HISTORY_TOOL!r}, which only the server's own "
            "front-ends may send (a standalone gateway needs AGENT_INTERNAL_TOKEN)",
            field="chat_context",
        )


def _origin(history: ChatHistory) -> str:
    return ".".join(o.tool for o in history.origin)


def _kept(context: ChatContext, origin: str) -> list[ChatMessage]:
    restored: list[ChatMessage] = []
    for history in context.chat_histories:
        if history.origin and _origin(history) == origin:
            restored.extend(m for m in history.messages if m.type in _KEPT)
    return restored


def _bounded(restored: list[ChatMessage]) -> list[ChatMessage]:
    if len(restored) > MAX_HISTORY_MESSAGES:
        raise InvalidRequest(
            f"chat_context holds {len(restored)} messages; at most {MAX_HISTORY_MESSAGES} are accepted",
            field="chat_context",
        )
    if sum(len(m.text) for m in restored) > MAX_HISTORY_CHARS:
        raise InvalidRequest("chat_context is too large", field="chat_context")
    return restored


def to_llm_messages(history: list[ChatMessage]) -> list[LlmMessage]:
    return [
        LlmMessage(role="user" if m.type is MessageType.HUMAN else "assistant", content=m.text)
        for m in history
    ]


def next_context(
    history: list[ChatMessage],
    origin: OriginPath,
    user_text: str,
    answer: str,
    max_messages: int | None,
    tool_results: Sequence[str] = (),
) -> ChatContext:
    """The chat_context to return: the history plus this turn, text kept exactly.
    ``tool_results`` (what the front man's tools returned this turn) are kept as AI
    messages before the answer, as neuro-san keeps them."""
    messages = [ChatMessage(type=m.type, text=m.text, origin=origin) for m in history]
    messages.append(ChatMessage(type=MessageType.HUMAN, text=user_text, origin=origin))
    messages.extend(ChatMessage(type=MessageType.AI, text=text, origin=origin) for text in tool_results)
    messages.append(ChatMessage(type=MessageType.AI, text=answer, origin=origin))
    if max_messages is not None and max_messages > 0:
        messages = messages[-max_messages:]
    return ChatContext(chat_histories=[ChatHistory(origin=origin, messages=messages)])
