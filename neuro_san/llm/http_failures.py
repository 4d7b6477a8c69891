"""A provider's non-success reply as an LlmError, its message a short, key-free excerpt of
what the provider said. Used by :mod:`neuro_san.llm.http` for a whole reply's status and by
:mod:`neuro_san.llm.streaming` for an error event part-way through a stream."""

from __future__ import annotations

import json
import re
from typing import Any

from neuro_san.llm.errors import (
    LlmAuthError,
    LlmBadRequest,
    LlmContextTooLong,
    LlmHttpError,
    LlmNotFound,
    LlmRateLimited,
    LlmUnsupported,
)
from neuro_san.llm.provider_errors import context_limit, is_context_length_error, is_unsupported_error

#: Longest provider error excerpt copied into an exception message.
EXCERPT_CHARS = 300
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_-]{2})[A-Za-z0-9_\-*.]{4,}")


def http_failure(
    status: int,
    body: bytes,
    retry_after: float | None,
    secrets: list[str],
    provider: str,
    where: str,
    key_source: str,
    target: str,
    retried: bool = True,
) -> LlmHttpError:
    """The exception for a non-success reply (raised by the caller once retries are over;
    ``retried`` False: an error part-way through a streamed reply, which is not retried)."""
    detail = _provider_message(body, secrets)
    suffix = f": {detail}" if detail else ""
    if status in (401, 403):
        hint = f"; check {key_source}" if key_source else ""
        return LlmAuthError(
            f"the API key was rejected (HTTP {status} from {where}){hint}{suffix}",
            provider,
            status,
        )
    if status == 404:
        what = target or "the endpoint"
        return LlmNotFound(f"{what} not found (HTTP 404 from {where}){suffix}", provider, status)
    if status == 429:
        return LlmRateLimited(
            f"rate limited (HTTP 429 from {where}){' after all retries' if retried else ''}{suffix}",
            provider,
            status,
            retry_after,
        )
    if 400 <= status < 500 and status != 408 and is_context_length_error(detail):
        limit = context_limit(detail)
        stated = f"{limit} tokens" if limit else "its size not stated by the provider"
        return LlmContextTooLong(
            f"the conversation is longer than the model's context window ({stated}; HTTP {status} "
            f"from {where}){suffix}",
            provider,
            status,
            limit,
        )
    if status in (400, 422):
        if is_unsupported_error(detail):
            what = f" for {target}" if target else ""
            return LlmUnsupported(
                f"the provider refused the configuration{what} (HTTP {status} from {where}){suffix}",
                provider,
                status,
            )
        return LlmBadRequest(f"the provider refused the request (HTTP {status} from {where}){suffix}", provider, status)
    return LlmHttpError(f"HTTP {status} from {where}{suffix}", provider, status, retry_after)


def _provider_message(body: bytes, secrets: list[str]) -> str:
    """A short, key-free excerpt of the provider's error message."""
    try:
        decoded = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return excerpt_text(body, secrets)
    message: Any = decoded
    if isinstance(decoded, dict):
        # OpenAI and Anthropic: {"error": {"message": ...}}; others: {"error": "..."} or
        # {"message": ...}.
        error = decoded.get("error", decoded)
        message = error.get("message", error) if isinstance(error, dict) else error
    text = message if isinstance(message, str) else json.dumps(message)
    return excerpt_text(text.encode(), secrets)


def excerpt_text(body: bytes, secrets: list[str]) -> str:
    text = " ".join(body.decode("utf-8", errors="replace").split())
    for secret in secrets:
        # "Bearer sk-…": scrub the token as well as the whole value.
        for value in {secret, secret.split(" ", 1)[-1]}:
            if len(value) >= 4:
                text = text.replace(value, "***")
    text = _KEY_LIKE.sub(r"\1***", text)
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + "…"
    return text
