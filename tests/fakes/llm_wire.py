"""The wire formats the fake LLM server speaks: scripted replies and how they are rendered.

:class:`Reply` and :class:`FakeToolCall` describe what the fake should answer; the
functions render them as an OpenAI chat-completions or Anthropic messages body.
Import them from :mod:`tests.fakes.fake_llm`, which re-exports them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Protocol = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call the fake model makes. ``arguments`` may be a raw (even broken) string."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods."""

    kind: Literal["answer", "error", "garbage", "drop", "stall", "hold"] = "answer"
    text: str = ""
    tool_calls: tuple[FakeToolCall, ...] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    message: str = ""
    body: str | None = None
    seconds: float = 0.0
    then: Reply | None = None
    usage: tuple[int, int] | None = None
    model: str | None = None

    @classmethod
    def answer(cls, text: str, *, usage: tuple[int, int] | None = None) -> Reply:
        """A plain text answer; ``usage`` is (prompt, completion) tokens."""
        return cls(text=text, usage=usage)

    @classmethod
    def calls(cls, *calls: FakeToolCall, text: str = "") -> Reply:
        """An answer asking for the given tool calls (in parallel)."""
        return cls(text=text, tool_calls=tuple(calls))

    @classmethod
    def error(cls, status: int, message: str = "", *, headers: Mapping[str, str] | None = None) -> Reply:
        """An HTTP error in the provider's error format."""
        return cls(kind="error", status=status, message=message or f"fake {status}", headers=headers or {})

    @classmethod
    def garbage(cls, body: str = "<html>not json</html>", status: int = 200) -> Reply:
        """A body that is not JSON."""
        return cls(kind="garbage", body=body, status=status)

    @classmethod
    def drop(cls) -> Reply:
        """Close the connection without answering."""
        return cls(kind="drop")

    @classmethod
    def stall(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Wait ``seconds`` (the client may give up first), then answer ``then`` (or echo)."""
        return cls(kind="stall", seconds=seconds, then=then)

    @classmethod
    def hold(cls, then: Reply | None = None, *, seconds: float = 60.0) -> Reply:
        """Wait until the test calls ``FakeLlmServer.release()``, then answer ``then`` (or
        echo). ``seconds`` is only a safety valve so that a broken test ends: a test proves
        "X happened before the LLM answered" by checking X while the reply is still held,
        which no machine speed can change (a timed stall would be a race)."""
        return cls(kind="hold", seconds=seconds, then=then)


def text_of(content: Any) -> str:
    """The text in a message's content (string, text blocks, or tool_result blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "tool_result":
                    parts.append(text_of(block.get("content")))
                elif isinstance(block.get("text"), str):
                    parts.append(block["text"])
        return " ".join(part for part in parts if part)
    return ""


def words(text: str) -> int:
    return len(text.split())


def openai_answer(model: str, reply: Reply, usage: tuple[int, int], ids: Iterator[int]) -> dict[str, Any]:
    """A chat-completions reply body."""
    prompt, completion = usage
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{next(ids)}",
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                },
            }
            for call in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-{next(ids)}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def anthropic_answer(model: str, reply: Reply, usage: tuple[int, int], ids: Iterator[int]) -> dict[str, Any]:
    """A messages reply body."""
    prompt, completion = usage
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        arguments = call.arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass  # sent as a string: the adapter must cope
        content.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_{next(ids)}",
                "name": call.name,
                "input": arguments,
            }
        )
    return {
        "id": f"msg_{next(ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def error_body(protocol: Protocol, reply: Reply) -> dict[str, Any]:
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": "fake_error", "message": reply.message}}
    return {"error": {"message": reply.message, "type": "fake_error", "code": reply.status}}
