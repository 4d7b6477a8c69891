"""Reading a provider's 4xx error message for its meaning. Pure functions, no I/O.

A 400 can mean three different things for a client, and providers say which only in
the message text:

- the conversation no longer fits the model's context window (OpenAI and DeepSeek
  ``This model's maximum context length is 128000 tokens…``, code
  ``context_length_exceeded``; Anthropic ``prompt is too long: 208310 tokens > 200000
  maximum``; Gemini ``The input token count (1200000) exceeds the maximum number of
  tokens allowed (1048576)``; Bedrock ``Input is too long for requested model``);
- the configured model does not take a parameter or does not exist for this key
  (``Unsupported parameter``, ``model_not_found``, ``does not support``, Bedrock's
  ``The provided model identifier is invalid``, Gemini's 400 ``API key not valid``…):
  the server's configuration must change;
- anything else: we built a request the provider refused.
"""

from __future__ import annotations

import re

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
