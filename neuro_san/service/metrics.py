"""Prometheus metrics: the server's :class:`~neuro_san.core.telemetry.Telemetry`.

Metrics live in prometheus_client's default registry, so whatever serves ``/metrics``
in this process (the in-process gateway, or ``--metrics-port``) shows them all. Agent
labels are limited to served agents (anything else is ``unknown``), so a client cannot
blow up the label space with made-up names. With access control on (API keys or OAuth), a
private network (``public: false``) is labelled ``private``, never by its name: ``/metrics``
needs no credential (scrapers, the separate ``--metrics-port``), so it must not list what
only some keys may see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from neuro_san.core.telemetry import Telemetry

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

REQUESTS = Counter("neuro_san_requests", "Calls by agent, method and gRPC status.", ["agent", "method", "code"])
REQUEST_SECONDS = Histogram(
    "neuro_san_request_seconds", "Call duration by agent and method.", ["agent", "method"], buckets=_LATENCY_BUCKETS
)
ACTIVE_STREAMS = Gauge("neuro_san_active_streams", "StreamingChat calls in progress.")
LLM_CALLS = Counter(
    "neuro_san_llm_calls", "Model calls by provider, model and outcome.", ["provider", "model", "outcome"]
)
LLM_SECONDS = Histogram(
    "neuro_san_llm_seconds", "Model call duration, retries included.", ["provider", "model"], buckets=_LATENCY_BUCKETS
)
LLM_TOKENS = Counter("neuro_san_llm_tokens", "Tokens by provider, model and kind.", ["provider", "model", "kind"])
LLM_RETRIES = Counter("neuro_san_llm_retries", "Model call retries by provider.", ["provider"])
TOOL_CALLS = Counter("neuro_san_tool_calls", "Tool calls by kind and outcome.", ["kind", "outcome"])
RELOADS = Counter("neuro_san_network_changes", "Networks added, changed or removed by reloads.")


def children_of(metric: Any) -> Callable[..., Any]:
    """``metric.labels(*values)``, remembered: prometheus_client checks and locks on every
    ``labels()`` call (2 % of a chat's server CPU). The label sets are bounded (served
    agents, methods, codes, configured models), so the cache is too."""
    children: dict[tuple[str, ...], Any] = {}

    def child(*values: str) -> Any:
        found = children.get(values)
        if found is None:
            found = children[values] = metric.labels(*values)
        return found

    return child


_REQUESTS = children_of(REQUESTS)
_REQUEST_SECONDS = children_of(REQUEST_SECONDS)
_LLM_CALLS = children_of(LLM_CALLS)
_LLM_SECONDS = children_of(LLM_SECONDS)
_LLM_TOKENS = children_of(LLM_TOKENS)


#: The agent label of a call to a network that is not served.
UNKNOWN = "unknown"
#: The agent label of every private network while access control is on.
PRIVATE = "private"


class PrometheusTelemetry(Telemetry):
    def __init__(self, label_of: Callable[[str], str | None]) -> None:
        """``label_of``: an agent's label (its name, or :data:`PRIVATE`), None when not served."""
        self._label_of = label_of

    def _agent(self, agent: str) -> str:
        return (self._label_of(agent) if agent else None) or UNKNOWN

    def request_started(self, agent: str, method: str) -> None:
        if method == "StreamingChat":
            ACTIVE_STREAMS.inc()

    def request_finished(self, agent: str, method: str, code: str, seconds: float) -> None:
        label = self._agent(agent)
        _REQUESTS(label, method, code).inc()
        _REQUEST_SECONDS(label, method).observe(seconds)
        if method == "StreamingChat":
            ACTIVE_STREAMS.dec()

    def llm_call(
        self, provider: str, model: str, seconds: float, prompt_tokens: int, completion_tokens: int, ok: bool
    ) -> None:
        _LLM_CALLS(provider, model, "ok" if ok else "error").inc()
        _LLM_SECONDS(provider, model).observe(seconds)
        if prompt_tokens:
            _LLM_TOKENS(provider, model, "prompt").inc(prompt_tokens)
        if completion_tokens:
            _LLM_TOKENS(provider, model, "completion").inc(completion_tokens)

    def llm_retry(self, provider: str) -> None:
        LLM_RETRIES.labels(provider).inc()

    def tool_call(self, kind: str, ok: bool) -> None:
        TOOL_CALLS.labels(kind, "ok" if ok else "error").inc()

    def networks_changed(self, count: int) -> None:
        RELOADS.inc(count)
