"""OpenTelemetry tracing: the optional :class:`~neuro_san.core.telemetry.Telemetry` that
records spans, on top of the metrics one.

Off unless switched on (``AGENT_TRACING=otel`` or ``neuro-san serve --tracing``) *and*
the ``tracing`` extra (``opentelemetry-api``, ``opentelemetry-sdk``) is installed; only
then is this module imported, so a server without tracing never imports opentelemetry.

Spans: ``chat <agent>`` / ``function <agent>`` / ``connectivity <agent>`` (server; the
parent is the caller's W3C ``traceparent``/``tracestate`` from gRPC metadata, which the
gateway makes of the HTTP headers), ``agent <name>`` for each LLM agent invocation,
``llm <provider> <model>`` with token counts, ``tool <name>`` with its kind and an error
flag. Calls to external agents on other servers carry the trace context in their
metadata (or HTTP headers). Attributes are names, counts and flags only: never sly_data,
message text or credentials; a failure records the exception's type, not its message.

Where spans go: if the process already has an SDK tracer provider (``opentelemetry-instrument``
or the embedding application set one), that one. Otherwise one is installed with the
exporter ``AGENT_TRACING_EXPORT`` (or ``OTEL_TRACES_EXPORTER``) names:

- ``otlp`` (the default): OTLP, when ``opentelemetry-exporter-otlp`` is installed
  (configured by the usual ``OTEL_EXPORTER_OTLP_*`` variables);
- ``console``: each span as JSON on stderr;
- ``jsonl:/path``: each finished span as one JSON line appended to that file, written at
  once. A test aid (the suite reads spans of server subprocesses this way), not for
  production.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode

from neuro_san.core.telemetry import AttributeValue, Telemetry
from neuro_san.settings import process_env

log = logging.getLogger(__name__)

INSTRUMENTATION_NAME = "neuro_san"
#: The metadata keys trace context travels in (W3C Trace Context).
TRACE_KEYS = frozenset({"traceparent", "tracestate"})

_KINDS = {"internal": SpanKind.INTERNAL, "server": SpanKind.SERVER, "client": SpanKind.CLIENT}


class TracingTelemetry(Telemetry):
    """Spans from ``tracer_provider`` (default: the global one); every metrics hook goes
    to ``metrics``, so Prometheus and tracing work side by side."""

    def __init__(self, metrics: Telemetry, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._metrics = metrics
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer(INSTRUMENTATION_NAME)

    # Metrics: delegated as they are.

    def request_started(self, agent: str, method: str) -> None:
        self._metrics.request_started(agent, method)

    def request_finished(self, agent: str, method: str, code: str, seconds: float) -> None:
        self._metrics.request_finished(agent, method, code, seconds)

    def llm_call(
        self, provider: str, model: str, seconds: float, prompt_tokens: int, completion_tokens: int, ok: bool
    ) -> None:
        self._metrics.llm_call(provider, model, seconds, prompt_tokens, completion_tokens, ok)

    def llm_retry(self, provider: str) -> None:
        self._metrics.llm_retry(provider)

    def tool_call(self, kind: str, ok: bool) -> None:
        self._metrics.tool_call(kind, ok)

    def networks_changed(self, count: int) -> None:
        self._metrics.networks_changed(count)

    # Tracing.

    def span(  # type: ignore[override]
        self,
        name: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        parent: Any = None,
        kind: str = "internal",
    ) -> Any:
        return self._span(name, attributes, parent, kind)

    @contextmanager
    def _span(
        self, name: str, attributes: Mapping[str, AttributeValue] | None, parent: Any, kind: str
    ) -> Iterator[trace.Span]:
        # Exceptions are recorded by hand: OpenTelemetry's own recording would put the
        # exception's message (which may quote user input) into the span.
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            kind=_KINDS.get(kind, SpanKind.INTERNAL),
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except BaseException as error:
                span.set_attribute("error.type", type(error).__name__)
                span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                raise

    def extract(self, metadata: Iterable[tuple[str, Any]]) -> Any:
        carrier = {key: value for key, value in metadata if key in TRACE_KEYS and isinstance(value, str)}
        return propagate.extract(carrier) if carrier else None

    def inject(self, carrier: dict[str, str]) -> None:
        propagate.inject(carrier, context=otel_context.get_current())


def tracing_telemetry(metrics: Telemetry) -> Telemetry:
    """Tracing over ``metrics``, with a tracer provider installed if the process has none."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(_provider_from_env(process_env()))
    return TracingTelemetry(metrics)


def _provider_from_env(env: Mapping[str, str]) -> TracerProvider:
    service = env.get("OTEL_SERVICE_NAME") or "neuro-san"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    choice = (env.get("AGENT_TRACING_EXPORT") or env.get("OTEL_TRACES_EXPORTER") or "otlp").strip()
    if choice.startswith("jsonl:"):
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(choice[len("jsonl:") :])))
    elif choice == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    elif choice == "otlp":
        exporter = _otlp_exporter()
        if exporter is None:
            log.warning("tracing: no OTLP exporter (pip install opentelemetry-exporter-otlp); spans are not exported")
        else:
            provider.add_span_processor(BatchSpanProcessor(exporter))
    elif choice != "none":
        log.warning("tracing: unknown exporter %r (otlp, console, jsonl:<file>, none); spans not exported", choice)
    return provider


def _otlp_exporter() -> SpanExporter | None:
    try:
        # Optional exporters: whichever is installed.
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    except ImportError:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
                OTLPSpanExporter,
            )
        except ImportError:
            return None
    return OTLPSpanExporter()  # type: ignore[no-any-return]


class JsonLinesExporter(SpanExporter):
    """Appends each span to a file as one JSON line (a test aid; see the module doc)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(span)) + "\n" for span in spans)
        with self._lock, open(self._path, "a", encoding="utf-8") as sink:
            sink.write(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """A span as plain JSON: ids in hex, attributes, events, status."""
    context = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "kind": span.kind.name if span.kind is not None else "",
        "trace_id": f"{context.trace_id:032x}" if context else "",
        "span_id": f"{context.span_id:016x}" if context else "",
        "parent_span_id": f"{parent.span_id:016x}" if parent else "",
        "attributes": dict(span.attributes or {}),
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
        "status": span.status.status_code.name,
        "service": str((span.resource.attributes if span.resource else {}).get("service.name", "")),
    }
