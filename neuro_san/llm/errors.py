"""Errors raised by models. Each maps to a core error and so to a status code.

Codes follow what a client can do about the failure: retry later (UNAVAILABLE), fix the
server's configuration (FAILED_PRECONDITION), shorten the conversation
(RESOURCE_EXHAUSTED), or nothing (INTERNAL: the provider refused a request we built).

    LlmError (UpstreamUnavailable: UNAVAILABLE)
    ├── LlmHttpError           a non-success HTTP reply; ``status``, ``retry_after``;
    │   │                      408 and 5xx after the retries ran out (UNAVAILABLE)
    │   ├── LlmAuthError       401/403: bad or missing API key (FAILED_PRECONDITION)
    │   ├── LlmNotFound        404: unknown model or endpoint (FAILED_PRECONDITION)
    │   ├── LlmRateLimited     429 after the retries ran out (UNAVAILABLE)
    │   ├── LlmBadRequest      400/422: the provider refused the request (INTERNAL)
    │   ├── LlmUnsupported     400/422 about the configured model or a parameter
    │   │                      it does not take (FAILED_PRECONDITION)
    │   └── LlmContextTooLong  the conversation exceeds the model's context window
    │                          (RESOURCE_EXHAUSTED; ``limit`` when the provider says)
    ├── LlmConnectionError     could not connect / connection dropped
    ├── LlmTimeout             no answer in time (DEADLINE_EXCEEDED)
    └── LlmMalformedReply      the reply is not what the API promises

A provider says what a 4xx means only in its message text, read here by pure
functions (:func:`is_context_length_error`, :func:`is_unsupported_error`,
:func:`context_limit`); :func:`http_failure` turns a non-success reply (a whole reply's status
in :mod:`neuro_san.llm.http`, an error event part-way through a stream in
:mod:`neuro_san.llm.streams.framing`) into the right class, its message a short, key-free
excerpt of what the provider said.
"""

from __future__ import annotations

import json
import re
from typing import Any

from neuro_san.core.errors import Code, UpstreamUnavailable


class LlmError(UpstreamUnavailable):
    """A model call failed. ``provider`` names the adapter."""

    reason = "LLM_FAILED"

    def __init__(self, message: str, provider: str = "") -> None:
        super().__init__(f"{provider}: {message}" if provider else message)
        self.provider = provider


class LlmHttpError(LlmError):
    def __init__(
        self,
        message: str,
        provider: str = "",
        status: int = 0,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider)
        self.status = status
        self.retry_after = retry_after


class LlmAuthError(LlmHttpError):
    code = Code.FAILED_PRECONDITION
    reason = "LLM_AUTH_FAILED"


class LlmNotFound(LlmHttpError):
    code = Code.FAILED_PRECONDITION
    reason = "LLM_NOT_FOUND"


class LlmRateLimited(LlmHttpError):
    # UNAVAILABLE, not RESOURCE_EXHAUSTED: the provider's quota, not the client's, ran
    # out, and trying again later is the right reaction.
    reason = "LLM_RATE_LIMITED"


class LlmBadRequest(LlmHttpError):
    code = Code.INTERNAL
    reason = "LLM_BAD_REQUEST"


class LlmUnsupported(LlmHttpError):
    code = Code.FAILED_PRECONDITION
    reason = "LLM_UNSUPPORTED"


class LlmContextTooLong(LlmHttpError):
    code = Code.RESOURCE_EXHAUSTED
    reason = "LLM_CONTEXT_TOO_LONG"

    def __init__(self, message: str, provider: str = "", status: int = 0, limit: int | None = None) -> None:
        super().__init__(message, provider, status)
        self.limit = limit


class LlmKeyMissing(LlmError):
    """A bring-your-own-key llm_config value the request's sly_data does not give."""

    code = Code.INVALID_ARGUMENT
    reason = "LLM_KEY_MISSING"


class LlmConnectionError(LlmError):
    reason = "LLM_CONNECTION_FAILED"


class LlmTimeout(LlmError):
    code = Code.DEADLINE_EXCEEDED
    reason = "LLM_TIMEOUT"


class LlmMalformedReply(LlmError):
    reason = "LLM_MALFORMED_REPLY"


# A 400 can mean three different things for a client, and providers say which only in
# the message text:
#
# - the conversation no longer fits the model's context window (OpenAI and DeepSeek
#   ``This model's maximum context length is 128000 tokens…``, code
#   ``context_length_exceeded``; Anthropic ``prompt is too long: 208310 tokens > 200000
#   maximum``; Gemini ``The input token count (1200000) exceeds the maximum number of
#   tokens allowed (1048576)``; Bedrock ``Input is too long for requested model``);
# - the configured model does not take a parameter or does not exist for this key
#   (``Unsupported parameter``, ``model_not_found``, ``does not support``, Bedrock's
#   ``The provided model identifier is invalid``, Gemini's 400 ``API key not valid``…):
#   the server's configuration must change;
# - anything else: we built a request the provider refused.
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "input is too long",
    "input token count",
    "too many input tokens",
    "exceeds the maximum number of tokens",
    "reduce the length of the messages",
)
_UNSUPPORTED_MARKERS = (
    "unsupported parameter",
    "unsupported_parameter",
    "unsupported value",
    "unsupported_value",
    "model_not_found",
    "does not support",
    "is not supported",
    "not supported with this model",
    "invalid model",
    "unknown model",
    "model not found",
    "does not exist",
    "model identifier is invalid",  # Bedrock ValidationException
    "api key not valid",  # Gemini answers a bad key with 400 INVALID_ARGUMENT
    "api_key_invalid",
)
#: Phrases that state the window's size, most specific first.
_LIMIT_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*)", re.IGNORECASE),
    re.compile(r">\s*(\d[\d,]*)\s*maximum", re.IGNORECASE),
    re.compile(r"maximum number of tokens allowed \((\d[\d,]*)\)", re.IGNORECASE),
    re.compile(r"context (?:window|length|limit) (?:of|is) (\d[\d,]*)", re.IGNORECASE),
    re.compile(r"limit of (\d[\d,]*) tokens", re.IGNORECASE),
)


def is_context_length_error(message: str) -> bool:
    """Whether a provider's error message says the input exceeds the context window."""
    lowered = message.lower()
    return any(marker in lowered for marker in _CONTEXT_MARKERS)


def is_unsupported_error(message: str) -> bool:
    """Whether a 400/422 message blames the configured model or one of its parameters."""
    lowered = message.lower()
    return any(marker in lowered for marker in _UNSUPPORTED_MARKERS)


def context_limit(message: str) -> int | None:
    """The context window's size in tokens, when the message states it."""
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(message)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


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
