"""Hooks the server calls as work happens, for metrics (and anything else that watches).

The runtime and the service call a :class:`Telemetry`; the default does nothing, so the
core needs no metrics library. ``neuro_san.service.metrics.PrometheusTelemetry`` is the
implementation the server installs. Hooks must be cheap and must never raise; they are
never given sly_data or message text.
"""

from __future__ import annotations


class Telemetry:
    def request_started(self, agent: str, method: str) -> None:
        """A call of ``method`` (Function, Connectivity, StreamingChat) began."""

    def request_finished(self, agent: str, method: str, code: str, seconds: float) -> None:
        """It ended with gRPC status name ``code`` (``OK``, ``NOT_FOUND`` …)."""

    def llm_call(
        self, provider: str, model: str, seconds: float, prompt_tokens: int, completion_tokens: int, ok: bool
    ) -> None:
        """One model call (all of its retries) ended."""

    def llm_retry(self, provider: str) -> None:
        """A model call is being retried."""

    def tool_call(self, kind: str, ok: bool) -> None:
        """A tool call ended; ``kind`` is llm_agent, coded_tool or external_agent."""

    def networks_changed(self, count: int) -> None:
        """A reload added, changed or removed ``count`` networks."""


#: The do-nothing default.
NO_TELEMETRY = Telemetry()
