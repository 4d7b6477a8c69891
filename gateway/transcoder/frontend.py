"""The REST transcoder as a front-end: one route per ``google.api.http`` binding, plus
the OpenAPI document at ``/api/v1/docs``.

Everything per route (compiled pattern, binder, codecs, the invoker's callable) is
prepared here, once; a request only binds, calls and renders. The host has already
matched it, refused it while draining and read its body under the guards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aiohttp import web
from google.protobuf.descriptor import ServiceDescriptor

from gateway.host.errors import GatewayError
from gateway.host.frontends import FrontEndContext, FrontEndFactory, FrontEndHandler, FrontEndRoute
from gateway.host.metadata import parse_timeout, stamp_request_id
from gateway.host.responses import dumps, json_response
from gateway.transcoder.binder import RequestBinder
from gateway.transcoder.forward import SSE_TYPE, Forwarder
from gateway.transcoder.marshal import MessageCodec
from gateway.transcoder.openapi import build_document
from gateway.transcoder.routes import Route, routes_from_services
from neuro_san.core.errors import Code, echo

DOCS_PATH = "/api/v1/docs"
#: Body types read as JSON. Beyond JSON's own: text/plain, and the form type that
#: ``curl -d`` sends by default, because upstream neuro-san parses any body as JSON and
#: users' curl commands omit ``-H``. Anything else (multipart, XML, octet-stream…) is 415.
_JSON_BODY_TYPES = frozenset(
    {"application/json", "text/json", "text/plain", "application/x-www-form-urlencoded"}
)


class RestFrontEnd:
    """The transcoded API: knows only the descriptors and the invoker (via the context)."""

    def __init__(self, context: FrontEndContext, services: Sequence[ServiceDescriptor]) -> None:
        self._context = context
        self.routes_table = routes_from_services(services)
        self._docs_document = build_document(self.routes_table)
        self._docs_json = dumps(self._docs_document)
        self._docs_yaml = b""  # rendered on its first request: YAML costs ~45 ms of start-up

    def routes(self) -> Iterable[FrontEndRoute]:
        found = [
            FrontEndRoute(route.http_method, route.template, route.method.name, self._handler(route),
                          takes_body=bool(route.body), pattern=route.pattern)
            for route in self.routes_table
        ]
        found.append(FrontEndRoute("GET", DOCS_PATH, "docs", self._docs, drains=False))
        return found

    async def close(self) -> None:
        """Nothing to release: the invoker is the host's."""

    def _handler(self, route: Route) -> FrontEndHandler:
        binder = RequestBinder(route)
        forwarder = Forwarder(
            call=self._context.invoker.callable_for(route),
            codec=MessageCodec(route.response_class),
            response_body=route.response_body,
        )
        config = self._context.config

        async def call(request: web.Request, captures: dict[str, str], body: bytes) -> web.StreamResponse:
            if body and request.headers.get("Content-Type", "").strip():
                _check_content_type(request.content_type)
            metadata = self._context.metadata(request)  # per-address limits: see FrontEndContext
            timeout = parse_timeout(request.headers.get("Grpc-Timeout"), config.max_timeout_seconds)
            message, path_metadata = binder.bind(body, captures, request.query.items())
            if path_metadata:  # the route's own variables win over headers of the same name
                keys = {key for key, _ in path_metadata}
                metadata = [item for item in metadata if item[0] not in keys] + list(path_metadata)
            # The id is known before the call, so every answer (a stream's headers too) names it.
            metadata, id_headers = stamp_request_id(metadata, request.headers)
            if not route.server_streaming:
                return await forwarder.unary(message, metadata, timeout, id_headers)
            sse = SSE_TYPE in request.headers.get("Accept", "")
            return await forwarder.stream(
                request, message, metadata, timeout, sse=sse, heartbeat_seconds=config.keepalive_seconds,
                extra_headers=id_headers,
            )

        return call

    async def _docs(self, request: web.Request, _captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        wants_yaml = "yaml" in request.headers.get("Accept", "") or request.query.get("format") == "yaml"
        if wants_yaml:
            if not self._docs_yaml:
                import yaml  # only for this format: PyYAML costs start-up time

                self._docs_yaml = yaml.safe_dump(self._docs_document, sort_keys=False).encode("utf-8")
            return web.Response(body=self._docs_yaml, headers={"Content-Type": "application/yaml"})
        return json_response(200, self._docs_json)


def _check_content_type(content_type: str) -> None:
    if not (content_type in _JSON_BODY_TYPES or content_type.endswith("+json")):
        raise GatewayError(
            Code.INVALID_ARGUMENT,
            f"unsupported Content-Type {echo(content_type)}: send a JSON body as application/json",
            status=415,
        )


def default_services() -> list[ServiceDescriptor]:
    """The services this project serves over HTTP."""
    from neuro_san.api.grpc import agent_pb2, concierge_pb2  # generated code: loads with the server

    return [
        agent_pb2.DESCRIPTOR.services_by_name["AgentService"],
        concierge_pb2.DESCRIPTOR.services_by_name["ConciergeService"],
    ]


def rest_frontend(services: Sequence[ServiceDescriptor] | None = None) -> FrontEndFactory:
    """The REST front-end's factory (the default services unless others are given)."""
    return lambda context: RestFrontEnd(context, services or default_services())
