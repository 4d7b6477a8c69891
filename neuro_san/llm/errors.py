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
