"""The gateway's HTTP metrics, and ``GET /metrics`` for the whole process.

Metrics live in prometheus_client's default registry, next to the gRPC server's when
both run in one process (``neuro-san serve``), so one scrape of the gateway shows both.
The ``route`` label is a method name (``StreamingChat``) or a fixed endpoint name
(``readyz``), never the raw path: agent names and junk paths cannot grow the label set.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

#: Routes that matched nothing (404, 405) and CORS preflights.
UNMATCHED = "unmatched"
PREFLIGHT = "preflight"
#: A client that went away before the response was complete (nginx's convention).
CLIENT_CLOSED = 499

HTTP_REQUESTS = Counter(
    "neuro_san_gateway_http_requests", "Gateway HTTP requests by route and status.", ["route", "status"]
)
HTTP_SECONDS = Histogram(
    "neuro_san_gateway_http_request_seconds",
    "Gateway HTTP request duration (streams: until the last line), by route.",
    ["route"],
    buckets=_LATENCY_BUCKETS,
)


#: Children by labels, so a request skips prometheus_client's checks and lock in
#: ``labels()``; routes and statuses are a small fixed set.
_REQUEST_CHILDREN: dict[tuple[str, int], Counter] = {}
_SECONDS_CHILDREN: dict[str, Histogram] = {}


def observe(route: str, status: int, seconds: float) -> None:
    counter = _REQUEST_CHILDREN.get((route, status))
    if counter is None:
        counter = _REQUEST_CHILDREN[(route, status)] = HTTP_REQUESTS.labels(route, str(status))
    counter.inc()
    histogram = _SECONDS_CHILDREN.get(route)
    if histogram is None:
        histogram = _SECONDS_CHILDREN[route] = HTTP_SECONDS.labels(route)
    histogram.observe(seconds)


async def metrics_endpoint(request: web.Request) -> web.StreamResponse:
    """Prometheus text exposition of the default registry."""
    return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})
