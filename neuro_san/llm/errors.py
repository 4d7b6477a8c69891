"""Errors raised by models. Each maps to a core error and so to a status code.

    LlmError (UpstreamUnavailable: UNAVAILABLE)
    ├── LlmHttpError           a non-success HTTP reply; ``status``, ``retry_after``
    │   ├── LlmAuthError       401/403: bad or missing API key (FAILED_PRECONDITION)
    │   ├── LlmNotFound        404: unknown model or endpoint (FAILED_PRECONDITION)
    │   └── LlmRateLimited     429 after the retries ran out (RESOURCE_EXHAUSTED)
    ├── LlmConnectionError     could not connect / connection dropped
    ├── LlmTimeout             no answer in time (DEADLINE_EXCEEDED)
    └── LlmMalformedReply      the reply is not what the API promises
"""

from __future__ import annotations

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
    code = Code.RESOURCE_EXHAUSTED
    reason = "LLM_RATE_LIMITED"


class LlmConnectionError(LlmError):
    reason = "LLM_CONNECTION_FAILED"


class LlmTimeout(LlmError):
    code = Code.DEADLINE_EXCEEDED
    reason = "LLM_TIMEOUT"


class LlmMalformedReply(LlmError):
    reason = "LLM_MALFORMED_REPLY"
