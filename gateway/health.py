"""``/healthz``, ``/readyz`` and ``/livez`` from ``grpc.health.v1.Health/Check``.

- ``/healthz`` and ``/readyz``: SERVING → 200; NOT_SERVING (draining) or UNKNOWN → 503;
  a service the server does not know (``?service=x``) → 404; the server unreachable →
  503. The body is ``{"status": "<ServingStatus name>", "service": "<name>"}``.
- ``/livez``: is the process pair alive? 200 whenever the gRPC server answers health at
  all, draining included (restarting a draining server would cut its streams short);
  503 when it cannot be reached.

While the gateway itself is stopping every probe answers 503 NOT_SERVING.
"""

from __future__ import annotations

import grpc
from aiohttp import web
from grpc_health.v1 import health_pb2

from gateway.forward import json_response
from gateway.invoker import Invoker
from gateway.marshal import dumps

_SERVING = health_pb2.HealthCheckResponse.SERVING
_PROBE_TIMEOUT_SECONDS = 3.0


def _answer(status: int, state: str, service: str, message: str = "") -> web.Response:
    body: dict[str, str] = {"status": state, "service": service}
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
