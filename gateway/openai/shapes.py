"""The JSON OpenAI's clients read: chat completions and their chunks, Responses objects,
models, usage, and our two conventions (``reasoning_content``, ``sly_data``)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from gateway.agents.interface import Answer, Step
from neuro_san.core.messages import TRUNCATION_CAVEAT

OWNED_BY = "neuro-san"


def new_id(prefix: str) -> str:
    """An id no one guesses (a Responses id is also what continues a conversation)."""
    return f"{prefix}{secrets.token_hex(24)}"


def now() -> int:
    return int(time.time())


def model_object(name: str, created: int) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": created, "owned_by": OWNED_BY}


def tokens(answer: Answer | None) -> tuple[int, int, int]:
    """(prompt, completion, total) tokens from the service's accounting; zeros when the
    chat reported none (no LLM call was made)."""
    usage: Mapping[str, Any] = (answer.usage if answer is not None else None) or {}

    def count(key: str) -> int:
        value = usage.get(key, 0)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    return count("prompt_tokens"), count("completion_tokens"), count("total_tokens")


def chat_usage(answer: Answer | None) -> dict[str, int]:
    prompt, completion, total = tokens(answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def responses_usage(answer: Answer | None) -> dict[str, Any]:
    prompt, completion, total = tokens(answer)
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": total}


def truncated(answer: Answer) -> bool:
    """The front man's answer was cut off at its model's output limit (the runtime marks it)."""
    return answer.text.endswith(TRUNCATION_CAVEAT)


def finish_reason(answer: Answer) -> str:
    return "length" if truncated(answer) else "stop"


def thinking(step: Step) -> str:
    """A step as a line of ``reasoning_content`` (the thinking Open WebUI and others show):
    who speaks and what (a coded tool's progress too); "" for what is no thought (the token
    accounting, keep-alives)."""
    text = step.text.strip()
    if not text or step.usage is not None or step.is_keepalive:
        return ""  # token reports and keep-alives are no thought
    return f"[{'.'.join(step.origin) or 'network'}] {text}\n"


def with_sly_data(body: dict[str, Any], answer: Answer | None) -> dict[str, Any]:
    """The extension field ``sly_data``: what the network lets out, when it lets anything."""
    if answer is not None and answer.sly_data:
        body["sly_data"] = dict(answer.sly_data)
    return body


def completion(completion_id: str, created: int, model: str, answer: Answer, reasoning: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if reasoning:
        message["reasoning_content"] = reasoning
    body = {
        "id": completion_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(answer), "logprobs": None}],
        "usage": chat_usage(answer), "system_fingerprint": None,
    }
    return with_sly_data(body, answer)


def chunk(
    completion_id: str, created: int, model: str, delta: dict[str, Any] | None, finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``delta`` None: the usage chunk (no choices)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
    body: dict[str, Any] = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": choices, "system_fingerprint": None}
    if usage is not None or delta is None:
        body["usage"] = usage
    return body


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [output_text(text)]
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def response_object(
    response_id: str, created: int, model: str, *, status: str, previous: str | None, store: bool,
    metadata: Mapping[str, str] | None, item_id: str, answer: Answer | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Responses ``response``; without ``answer`` it is the one announced at the start."""
    output = [] if answer is None else [message_item(item_id, answer.text, "completed")]
    incomplete = answer is not None and truncated(answer)
    body: dict[str, Any] = {
        "id": response_id, "object": "response", "created_at": created, "model": model,
        "status": "incomplete" if incomplete and status == "completed" else status,
        "error": error, "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None, "metadata": dict(metadata or {}), "output": output, "parallel_tool_calls": False,
        "previous_response_id": previous, "store": store, "temperature": None, "top_p": None,
        "text": {"format": {"type": "text"}}, "tool_choice": "none", "tools": [], "truncation": "disabled",
        "usage": responses_usage(answer) if answer is not None else None,
    }
    return with_sly_data(body, answer)
