"""The conversation shape Anthropic, Gemini and Bedrock share: the system text apart, and
turns whose roles strictly alternate.

Those providers take the instructions outside the turns and refuse two turns of one role
in a row; our history has tool results as their own messages (OpenAI's shape), so results
that follow one another (parallel tool calls), or a result followed by a user message,
become one turn with several content items.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from neuro_san.llm.interface import LlmMessage


def alternating_turns(
    messages: Sequence[LlmMessage],
    items: Callable[[LlmMessage], list[dict[str, Any]]],
    *,
    assistant_role: str,
    items_key: str,
) -> tuple[str, list[dict[str, Any]]]:
    """``(system text, turns)``: system messages joined by blank lines; every other message
    converted by ``items`` into the content of a ``{"role", items_key}`` turn, merged into the
    previous turn when the role repeats. A message that converts to nothing is left out
    (a turn with empty content is refused by each of these providers)."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
            continue
        role = assistant_role if message.role == "assistant" else "user"
        converted = items(message)
        if not converted:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1][items_key].extend(converted)
        else:
            turns.append({"role": role, items_key: converted})
    return "\n\n".join(system), turns
