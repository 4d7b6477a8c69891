"""Pieces of a provider's reply that every wire protocol reads the same way.

Each adapter (:mod:`~neuro_san.llm.adapters.openai_chat`, :mod:`~neuro_san.llm.adapters.anthropic`,
:mod:`~neuro_san.llm.adapters.gemini`, :mod:`~neuro_san.llm.adapters.bedrock`) walks its own reply shape,
but the leaves are alike: token counts that may be missing or of the wrong type, tool
calls whose arguments arrive as a JSON object (Anthropic, Gemini, Bedrock), and ids for
calls a provider sent without one. Reading them in one place keeps the adapters' answers
to a malformed reply the same.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.interface import ToolCall


def new_tool_call_id(prefix: str = "call_") -> str:
    """An id for a tool call the provider sent without one: random, so that it never
    repeats on a later round of the same conversation (``call_<index>`` would)."""
    return prefix + secrets.token_hex(12)


def token_count(usage: Any, key: str) -> int:
    """The token count at ``key`` of a reply's usage object; 0 when the object or the
    count is missing or not an integer (a bool is not one, though Python says it is)."""
    if not isinstance(usage, Mapping):
        return 0
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class ObjectArgumentsCall:
    """How one protocol spells a tool call whose arguments come as a JSON object.

    :meth:`read` gives the :class:`ToolCall`. A call without a string name cannot be run
    or answered: LlmMalformedReply ("<where> has no name"). Arguments that are not an
    object give ``{}`` and the error "<complaint>, got <type>", which the runtime shows
    the model.
    """

    #: The keys of the call's id, name and arguments.
    id_key: str
    arguments_key: str
    #: The prefix of the id made for a call that came without one.
    id_prefix: str
    #: Where the call stood, for the malformed-reply message; ``{index}`` is its position.
    where: str
    complaint: str
    #: Whether absent (or null) arguments mean "no arguments" rather than a wrong type.
    missing_is_empty: bool = False
    name_key: str = "name"

    def read(self, index: int, call: Mapping[str, Any], provider: str) -> ToolCall:
        name = call.get(self.name_key)
        if not isinstance(name, str):
            raise LlmMalformedReply(f"{self.where.format(index=index)} has no name", provider)
        call_id = str(call.get(self.id_key) or new_tool_call_id(self.id_prefix))
        arguments = call.get(self.arguments_key)
        if arguments is None and self.missing_is_empty:
            arguments = {}
        if isinstance(arguments, Mapping):
            return ToolCall(call_id, name, dict(arguments), json.dumps(arguments))
        return ToolCall(call_id, name, {}, json.dumps(arguments), f"{self.complaint}, got {type(arguments).__name__}")
