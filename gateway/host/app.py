"""The aiohttp application: one catch-all handler in front of the route table.

Everything per route (compiled pattern, binder, codecs, multicallable) is prepared in
:class:`Gateway`'s constructor; a request only matches, binds, calls and renders.
aiohttp's own router sees a single catch-all route, so 404, 405 (with ``Allow``)
and every other error come out of one place with the same Status body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web
from google.protobuf.descriptor import ServiceDescriptor

from gateway.config import GatewayConfig
from gateway.host.connection_guard import read_body
from gateway.host.errors import GatewayError, encode_status
from gateway.host.frontends import FrontEnd, FrontEndContext, FrontEndFactory, FrontEndRoute
from gateway.host.health import probe
from gateway.host.metadata import HeaderMapper, parse_timeout
from gateway.host.metrics import CLIENT_CLOSED, PREFLIGHT, UNMATCHED, metrics_endpoint, observe
from gateway.host.mux import Entry, MethodNotAllowed, NoRoute, Router
from gateway.host.pattern import CompiledPattern, Template, parse_template
from gateway.invokers.channel import Invoker
from gateway.transcoder.binder import RequestBinder
from gateway.transcoder.forward import SSE_TYPE, Forwarder, json_response
from gateway.transcoder.marshal import MessageCodec, dumps
from gateway.transcoder.openapi import build_document
from gateway.transcoder.routes import Route, routes_from_services
from neuro_san.core.errors import Code

log = logging.getLogger(__name__)

DOCS_PATH = "/api/v1/docs"
METRICS_PATH = "/metrics"
#: Body types read as JSON. Beyond JSON's own: text/plain, and the form type that
#: ``curl -d`` sends by default, because upstream neuro-san parses any body as JSON and
#: users' curl commands omit ``-H``. Anything else (multipart, XML, octet-stream…) is 415.
_JSON_BODY_TYPES = frozenset(
    {"application/json", "text/json", "text/plain", "application/x-www-form-urlencoded"}
)


@dataclass(frozen=True, slots=True)
class ApiTarget:
    """A transcoded gRPC method binding."""

    route: Route
    binder: RequestBinder
    forwarder: Forwarder


InternalHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class RouteLabel:
    """A request's metrics label, set as soon as it is known (a cancelled call keeps it)."""

    name: str = UNMATCHED


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One of the gateway's own endpoints; ``name`` is its metrics label."""

    name: str
    handler: InternalHandler


def default_services() -> list[ServiceDescriptor]:
    """The services this project serves over HTTP."""
    from neuro_san.api.grpc import agent_pb2, concierge_pb2

    return [
        agent_pb2.DESCRIPTOR.services_by_name["AgentService"],
        concierge_pb2.DESCRIPTOR.services_by_name["ConciergeService"],
    ]


class Gateway:
    """Routes, codecs and callables, built once; ``dispatch`` serves every request."""

    def __init__(
        self,
        invoker: Invoker,
        config: GatewayConfig,
        services: Iterable[ServiceDescriptor] | None = None,
        frontends: Iterable[FrontEndFactory] = (),
    ) -> None:
        self.invoker = invoker
        self.config = config
        self.draining = False
        self.routes = routes_from_services(services or default_services())
        self.mapper = HeaderMapper(config.forwarded_headers)
        self._cors_origins = frozenset(config.cors_origins)
        entries: list[Entry[ApiTarget | Endpoint | FrontEndRoute]] = []
        for route in self.routes:
            forwarder = Forwarder(
                call=invoker.callable_for(route),
                codec=MessageCodec(route.response_class),
                response_body=route.response_body,
            )
            entries.append(Entry(route.http_method, route.pattern,
                                 ApiTarget(route, RequestBinder(route), forwarder)))
        self._docs_document = build_document(self.routes)
        self._docs_json = dumps(self._docs_document)
        self._docs_yaml = b""  # rendered on its first request: YAML costs ~45 ms of start-up
        entries += [
            Router.fixed("GET", DOCS_PATH, Endpoint("docs", self._docs)),
            Router.fixed("GET", "/healthz", Endpoint("healthz", self._health)),
            Router.fixed("GET", "/readyz", Endpoint("readyz", self._health)),
            Router.fixed("GET", "/livez", Endpoint("livez", self._liveness)),
        ]
        if config.metrics:
            entries.append(Router.fixed("GET", METRICS_PATH, Endpoint("metrics", metrics_endpoint)))
        context = self._frontend_context = FrontEndContext(
            invoker=invoker,
            config=config,
            headers=self.mapper,
            is_draining=lambda: self.draining,
            routes_by_path={route.grpc_path: route for route in self.routes},
        )
        self.frontends: list[FrontEnd] = [factory(context) for factory in frontends]
        for frontend in self.frontends:
            for frontend_route in frontend.routes():
                # "/" has no segment to parse: it is the template with none (the playground's page).
                template = (Template("/", (), "") if frontend_route.template == "/"
                            else parse_template(frontend_route.template))
                pattern = CompiledPattern(template, greedy=frozenset(template.variable_names))
                entries.append(Entry(frontend_route.http_method, pattern, frontend_route))
        self.router: Router[ApiTarget | Endpoint | FrontEndRoute] = Router(entries)

    async def close_frontends(self) -> None:
        for frontend in self.frontends:
            try:
                await frontend.close()
            except Exception:  # one front-end's failure must not keep the others open
                log.exception("closing a front-end failed")

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_body_bytes)
        # [\s\S]: a decoded path may hold a newline, which "." would not match.
        app.router.add_route("*", r"/{tail:[\s\S]*}", self.dispatch)
        return app

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        status = CLIENT_CLOSED  # unless a response comes back: the handler was cancelled
        label = RouteLabel()
        try:
            response = await self._respond(request, label)
            status = response.status
            return response
        except ConnectionError:
            # The client went away mid-response (a write failed before aiohttp cancelled
            # us): not our error, nothing to log; aiohttp drops this reply quietly.
            return web.Response(status=CLIENT_CLOSED)
        finally:
            if self.config.metrics:
                observe(label.name, status, time.perf_counter() - started)

    async def _respond(self, request: web.Request, label: RouteLabel) -> web.StreamResponse:
        cors = self._cors_headers(request)
        raw_path = request.rel_url.raw_path
        try:
            if request.method == "OPTIONS":
                label.name = PREFLIGHT
                return self._with_cors(self._options(request, raw_path, cors), cors)
            match = self.router.match(request.method, raw_path)
            target = match.target
            if isinstance(target, ApiTarget):
                label.name = target.route.method.name
                response = await self._call(request, target, match.captures, cors)
            elif isinstance(target, FrontEndRoute):
                label.name = target.name
                response = await target.handler(request, match.captures)
            else:
                label.name = target.name
                response = await target.handler(request)
        except NoRoute:
            response = _error_response(GatewayError(Code.NOT_FOUND, "Not Found"))
        except MethodNotAllowed as error:
            response = _error_response(GatewayError(
                Code.UNIMPLEMENTED, "Method Not Allowed", status=405,
                headers={"Allow": ", ".join(error.allowed)},
            ))
        except GatewayError as error:
            response = _error_response(error)
        except ConnectionError:
            raise
        except Exception:  # a bug of ours: still a Status body, and the log has it
            log.exception("gateway error on %s %s", request.method, raw_path)
            response = _error_response(GatewayError(Code.INTERNAL, "internal gateway error"))
        return self._with_cors(response, cors)

    @staticmethod
    def _with_cors(response: web.StreamResponse, cors: list[tuple[str, str]]) -> web.StreamResponse:
        if not response.prepared:  # a stream already sent its headers, CORS included
            for name, value in cors:
                response.headers[name] = value
        return response

    async def _call(
        self,
        request: web.Request,
        target: ApiTarget,
        captures: dict[str, str],
        cors: list[tuple[str, str]],
    ) -> web.StreamResponse:
        if self.draining:
            raise GatewayError(Code.UNAVAILABLE, "the gateway is shutting down")
        route = target.route
        body = await self._read_body(request) if route.body else b""
        metadata = self._frontend_context.metadata(request)  # per-address limits: see FrontEndContext
        timeout = parse_timeout(request.headers.get("Grpc-Timeout"),
                                self.config.max_timeout_seconds)
        message, path_metadata = target.binder.bind(body, captures, request.query.items())
        if path_metadata:  # the route's own variables win over headers of the same name
            keys = {key for key, _ in path_metadata}
            metadata = [item for item in metadata if item[0] not in keys] + list(path_metadata)
        if not route.server_streaming:
            return await target.forwarder.unary(message, metadata, timeout)
        sse = SSE_TYPE in request.headers.get("Accept", "")
        return await target.forwarder.stream(
            request, message, metadata, timeout, sse=sse,
            heartbeat_seconds=self.config.keepalive_seconds, extra_headers=cors,
        )

    async def _read_body(self, request: web.Request) -> bytes:
        limit = self.config.max_body_bytes
        length = request.content_length
        if length is not None and length > limit:
            raise _too_large(limit)
        try:
            body = await read_body(request, self.config.connection_limits.body_read_seconds, limit)
        except web.HTTPRequestEntityTooLarge:
            raise _too_large(limit) from None
        if body and request.headers.get("Content-Type", "").strip():
            content_type = request.content_type
            if not (content_type in _JSON_BODY_TYPES or content_type.endswith("+json")):
                raise GatewayError(
                    Code.INVALID_ARGUMENT,
                    f"unsupported Content-Type {content_type!r}: send a JSON body as application/json",
                    status=415,
                )
        return body

    def _options(self, request: web.Request, raw_path: str, cors: list[tuple[str, str]]) -> (
        web.Response
    ):
        methods = self.router.allowed_methods(raw_path)
        if not methods:
            return _error_response(GatewayError(Code.NOT_FOUND, "Not Found"))
        allow = ", ".join([*methods, "OPTIONS"])
        response = web.Response(status=204, headers={"Allow": allow})
        if cors:
            response.headers["Access-Control-Allow-Methods"] = allow
            requested = request.headers.get("Access-Control-Request-Headers")
            if requested:
                response.headers["Access-Control-Allow-Headers"] = requested
            response.headers["Access-Control-Max-Age"] = "600"
        return response

    def _cors_headers(self, request: web.Request) -> list[tuple[str, str]]:
        origin = request.headers.get("Origin")
        if not origin or not self._cors_origins:
            return []
        if origin in self._cors_origins:
            allowed = origin
        elif "*" in self._cors_origins:
            allowed = "*"
        else:
            return []
        return [
            ("Access-Control-Allow-Origin", allowed),
            ("Access-Control-Expose-Headers", "*"),
            ("Vary", "Origin"),
        ]

    async def _docs(self, request: web.Request) -> web.StreamResponse:
        wants_yaml = "yaml" in request.headers.get("Accept", "") or (
            request.query.get("format") == "yaml"
        )
        if wants_yaml:
            if not self._docs_yaml:
                import yaml

                self._docs_yaml = yaml.safe_dump(self._docs_document, sort_keys=False).encode("utf-8")
            return web.Response(body=self._docs_yaml, headers={"Content-Type": "application/yaml"})
        return json_response(200, self._docs_json)

    async def _health(self, request: web.Request) -> web.StreamResponse:
        return await probe(self.invoker, request, liveness=False, draining=self.draining)

    async def _liveness(self, request: web.Request) -> web.StreamResponse:
        return await probe(self.invoker, request, liveness=True, draining=self.draining)


def _too_large(limit: int) -> GatewayError:
    return GatewayError(
        Code.INVALID_ARGUMENT, f"request body is larger than {limit} bytes", status=413
    )


def _error_response(error: GatewayError) -> web.Response:
    return json_response(
        error.http_status, encode_status(error.status_dict()), list(error.headers.items())
    )

