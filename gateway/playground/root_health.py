"""The health answer at ``/`` for clients that are not browsers (probes, curl, scripts).

neuro-san answers ``GET /`` with ``{"service", "status", "versions"}`` and monitors set
up for it probe there. This is the one place the playground builds that body, so it
can be pointed at the gateway's own neuro-san-shaped ``/healthz`` answer once that
exists (one function to change).
"""

from __future__ import annotations

from importlib import metadata

import grpc
from aiohttp import web
from grpc_health.v1 import health_pb2

from gateway.host.responses import dumps, json_response
from gateway.invokers.interface import Invoker
from neuro_san.settings import process_env

_PROBE_TIMEOUT_SECONDS = 3.0
_DEFAULT_SERVER_NAME = "neuro-san.Agent"


def _version() -> str:
    try:
        return metadata.version("neuro-san-grpc")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


async def root_health(invoker: Invoker, draining: bool) -> web.Response:
    """200 ``{"service", "status": "ok", "versions"}`` when serving, else 503 as neuro-san."""
    service = process_env().get("AGENT_SERVER_NAME") or _DEFAULT_SERVER_NAME
    serving = False
    if not draining:
        try:
            status = await invoker.health("", deadline=_PROBE_TIMEOUT_SECONDS)
            serving = status == health_pb2.HealthCheckResponse.SERVING
        except grpc.aio.AioRpcError:
            serving = False
    if not serving:
        return json_response(503, dumps({"error": "Service Unavailable"}))
    body = {"service": service, "status": "ok", "versions": {"neuro-san-grpc": _version()}}
    return json_response(200, dumps(body))
