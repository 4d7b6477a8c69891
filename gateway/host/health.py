"""``/healthz``, ``/readyz`` and ``/livez`` from ``grpc.health.v1.Health/Check``.

- ``/healthz`` and ``/readyz``: SERVING → 200; NOT_SERVING (draining) or UNKNOWN → 503;
  a service the server does not know (``?service=x``) → 404; the server unreachable →
  503.
- ``/livez``: is the process pair alive? 200 whenever the gRPC server answers health at
  all, draining included (restarting a draining server would cut its streams short);
  503 when it cannot be reached.

The gRPC health service decides; the body has neuro-san 0.7.15's shape. Healthy:
``{"service": <name>, "status": "ok", "versions": {…}, "serving_status": "SERVING"}``;
otherwise ``{"error": "Service Unavailable" | "Not Found", "service", "serving_status",
"message"?}``. ``service`` is ``?service=`` when given, else ``AGENT_SERVER_NAME``
(default ``neuro-san.Agent``, as upstream). ``versions`` names this server's version
(``neuro-san-grpc``) and the neuro-san API version it speaks (``neuro-san``).

While the gateway itself is stopping every probe answers 503 NOT_SERVING.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import grpc
from aiohttp import web
from grpc_health.v1 import health_pb2

from gateway.host.responses import dumps, json_response
from gateway.invokers.interface import Invoker
from neuro_san.settings import process_env

_SERVING = health_pb2.HealthCheckResponse.SERVING
_PROBE_TIMEOUT_SECONDS = 3.0
#: The neuro-san release whose API (protos, HTTP routes and JSON) this server speaks.
NEURO_SAN_API_VERSION = "0.7.15"


def _server_name(service: str) -> str:
    return service or process_env().get("AGENT_SERVER_NAME", "") or "neuro-san.Agent"


def _our_version() -> str:
    try:
        return importlib.metadata.version("neuro-san-grpc")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _answer(status: int, state: str, service: str, message: str = "") -> web.Response:
    body: dict[str, Any]
    if status == 200:
        versions = {"neuro-san": NEURO_SAN_API_VERSION, "neuro-san-grpc": _our_version()}
        body = {"service": _server_name(service), "status": "ok", "versions": versions}
    else:
        body = {"error": "Not Found" if status == 404 else "Service Unavailable", "service": _server_name(service)}
    body["serving_status"] = state
    if message:
        body["message"] = message
    return json_response(status, dumps(body))


async def probe(invoker: Invoker, request: web.Request, *, liveness: bool, draining: bool) -> (
    web.Response
):
    service = request.query.get("service", "")
    if draining:
        return _answer(503, "NOT_SERVING", service, "the gateway is shutting down")
    try:
        status = await invoker.health(service, deadline=_PROBE_TIMEOUT_SECONDS)
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return _answer(404, "SERVICE_UNKNOWN", service)
        return _answer(503, "UNREACHABLE", service, error.details() or error.code().name)
    name = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
    healthy = status == _SERVING or liveness
    return _answer(200 if healthy else 503, name, service)
