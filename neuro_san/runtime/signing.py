"""Tamper-proof chat_context: an HMAC over the histories, carried inside the context.

With a key configured (``AGENT_CHAT_CONTEXT_KEY``, the same on every replica), the
server appends one extra ``ChatHistory`` to each chat_context it returns: origin
``[{tool: "neuro-san.signature"}]`` and one AGENT message whose text is
``v1:<base64 HMAC-SHA256>`` over a canonical encoding of the other histories. Clients
copy chat_context back whole, as they already do, so the wire stays compatible; a
context whose histories were changed, or that carries no valid signature, is refused
with INVALID_ARGUMENT, so a client cannot plant SYSTEM or AI messages in a history.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from neuro_san.core.errors import InvalidRequest
from neuro_san.core.messages import ChatContext, ChatHistory, ChatMessage, MessageType, Origin

SIGNATURE_TOOL = "neuro-san.signature"
_VERSION = "v1:"


def _canonical(histories: list[ChatHistory]) -> bytes:
    encoded = [
        [
            [[o.tool, o.instantiation_index] for o in history.origin],
            [
                [int(m.type), m.text, [[o.tool, o.instantiation_index] for o in m.origin]]
                for m in history.messages
            ],
        ]
        for history in histories
    ]
    return json.dumps(encoded, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _is_signature(history: ChatHistory) -> bool:
    return len(history.origin) == 1 and history.origin[0].tool == SIGNATURE_TOOL


class ContextSigner:
    """Signs outgoing and verifies incoming chat_contexts with one shared key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the chat_context key must be at least 16 bytes")
        self._key = key

    def _mac(self, histories: list[ChatHistory]) -> str:
        digest = hmac.new(self._key, _canonical(histories), hashlib.sha256).digest()
        return _VERSION + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")

    def sign(self, context: ChatContext) -> ChatContext:
        histories = [h for h in context.chat_histories if not _is_signature(h)]
        signature = ChatHistory(
            origin=(Origin(SIGNATURE_TOOL, 1),),
            messages=[ChatMessage(type=MessageType.AGENT, text=self._mac(histories))],
        )
        return ChatContext(chat_histories=[*histories, signature])

    def verify(self, context: ChatContext) -> ChatContext:
        """The context without its signature; raises InvalidRequest when it is not intact."""
        signatures = [h for h in context.chat_histories if _is_signature(h)]
        histories = [h for h in context.chat_histories if not _is_signature(h)]
        if len(signatures) != 1 or len(signatures[0].messages) != 1:
            raise InvalidRequest(
                "chat_context carries no signature from this service; send back the chat_context "
                "of the last answer unchanged",
                field="chat_context",
            )
        given = signatures[0].messages[0].text
        if not hmac.compare_digest(given.encode(), self._mac(histories).encode()):
            raise InvalidRequest("chat_context was modified; send it back unchanged", field="chat_context")
        return ChatContext(chat_histories=histories)
