"""Hooks the server calls as work happens, for metrics (and anything else that watches).

The runtime and the service call a :class:`Telemetry`; the default does nothing, so the
core needs no metrics library. ``neuro_san.service.metrics.PrometheusTelemetry`` is the
implementation the server installs. Hooks must be cheap and must never raise; they are
never given sly_data or message text.

Tracing (optional, ``neuro_san.service.tracing``) uses three more hooks: ``span`` opens a
span around a piece of work, ``extract`` reads the caller's trace context from request
metadata and ``inject`` writes the current one into the metadata of an outgoing call.
Their defaults do nothing and allocate nothing: ``span`` returns one shared object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: What a span attribute may be (OpenTelemetry's primitive attribute types).
AttributeValue = str | bool | int | float


class Span:
    """A span in progress, as the runtime sees it. This one records nothing."""

    __slots__ = ()

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        """Add one attribute. Never give it sly_data, message text or credentials."""

    def update_name(self, name: str) -> None:
        """Rename the span (the agent of a call is known only after routing)."""

    def __enter__(self) -> Span:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


#: The span every ``span()`` of the default Telemetry returns.
NO_SPAN = Span()


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
        """A tool call ended; ``kind`` is llm_agent, coded_tool, external_agent or mcp_tool."""

    def networks_changed(self, count: int) -> None:
        """A reload added, changed or removed ``count`` networks."""

    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        parent: Any = None,
        kind: str = "internal",
    ) -> Span:
        """A context manager around one piece of work; entering it gives the :class:`Span`.

        ``parent`` is what :meth:`extract` returned (None: the current span, if any).
        ``kind`` is ``internal``, ``server`` or ``client``. An exception leaving the block
        marks the span as failed with the exception's type only, never its message."""
        return NO_SPAN

    def extract(self, metadata: Iterable[tuple[str, Any]]) -> Any:
        """The trace context a caller sent in request metadata (``traceparent``…), or None."""
        return None

    def inject(self, carrier: dict[str, str]) -> None:
        """Add the current trace context to the metadata of an outgoing call."""


#: The do-nothing default.
NO_TELEMETRY = Telemetry()
