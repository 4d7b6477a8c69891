"""The host's aiohttp application: one catch-all handler in front of one route table.

Every front-end (the REST transcoder, MCP, A2A, the playground) gives the host its
routes through the seam (:mod:`gateway.host.frontends`); the host adds its own
endpoints (``/healthz``, ``/readyz``, ``/livez``, ``/metrics``). aiohttp's router sees
a single catch-all route, so 404, 405 (with ``Allow``), OPTIONS and CORS come out of one
place, and so do the guards every route gets by construction: refusal while draining,
the ``Host`` allowlist (421 for a name the deployment did not list: DNS rebinding,
:mod:`gateway.host.allowed_hosts`), and the body read through
:func:`gateway.host.body.read_guarded_body` before the handler runs. Each refusal is
phrased by the matched route's renderer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from aiohttp import web

from gateway.host.allowed_hosts import SETTING as ALLOWED_HOSTS_SETTING
from gateway.host.body import read_guarded_body
from gateway.host.config import GatewayConfig
from gateway.host.errors import GatewayError, status_refusal
from gateway.host.frontends import FrontEnd, FrontEndContext, FrontEndFactory, FrontEndRoute, RefusalRenderer
from gateway.host.health import probe
from gateway.host.metadata import HeaderMapper
from gateway.host.metrics import CLIENT_CLOSED, PREFLIGHT, UNMATCHED, metrics_endpoint, observe
from gateway.host.mux import Entry, MethodNotAllowed, NoRoute, Router
from gateway.host.pattern import CompiledPattern, Template, parse_template
from gateway.invokers.interface import Invoker, MethodRef
from neuro_san.core.errors import Code

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"

InternalHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class RouteLabel:
    """A request's metrics label, set as soon as it is known (a cancelled call keeps it)."""

    name: str = UNMATCHED


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One of the host's own endpoints; ``name`` is its metrics label."""

    name: str
    handler: InternalHandler


class Host:
    """The route table, built once from the front-ends; ``dispatch`` serves every request."""

    def __init__(
        self,
        invoker: Invoker,
        config: GatewayConfig,
        methods: Mapping[str, MethodRef],
        frontends: Iterable[FrontEndFactory] = (),
        bound_host: str | None = None,
    ) -> None:
        self.invoker = invoker
        # The name the site listens on is allowed too; the front-ends see the same list
        # (MCP's Origin rule uses it).
        self.config = config = replace(config, allowed_hosts=config.allowed_hosts.with_bound(bound_host))
        self.draining = False
        self.mapper = HeaderMapper(config.forwarded_headers)
        self._cors_origins = frozenset(config.cors_origins)
        entries: list[Entry[Endpoint | FrontEndRoute]] = [
            Router.fixed("GET", "/healthz", Endpoint("healthz", self._health)),
            Router.fixed("GET", "/readyz", Endpoint("readyz", self._health)),
            Router.fixed("GET", "/livez", Endpoint("livez", self._liveness)),
        ]
        if config.metrics:
            entries.append(Router.fixed("GET", METRICS_PATH, Endpoint("metrics", metrics_endpoint)))
        self.context = FrontEndContext(
            invoker=invoker,
            config=config,
            headers=self.mapper,
            is_draining=lambda: self.draining,
            methods=methods,
        )
        self.frontends: list[FrontEnd] = [factory(self.context) for factory in frontends]
        for frontend in self.frontends:
            for route in frontend.routes():
                entries.append(Entry(route.http_method, route.pattern or _greedy_pattern(route.template), route))
        self.router: Router[Endpoint | FrontEndRoute] = Router(entries)

    def routes(self) -> list[FrontEndRoute]:
        """Every front-end route in the table (the tests walk it to check the guards)."""
        return [entry.target for entry in self.router.entries if isinstance(entry.target, FrontEndRoute)]

    async def close_frontends(self) -> None:
        for frontend in self.frontends:
            try:
                await frontend.close()
            except Exception:  # one front-end's failure must not keep the others open
                log.exception("closing a front-end failed")

    def make_app(self) -> web.Application:
        # aiohttp's own cap is a backstop: bodies are read by read_guarded_body, which
        # refuses past the same limit with the route's own error.
        app = web.Application(client_max_size=self.config.max_body_bytes)
        # [\s\S]: a decoded path may hold a newline, which "." would not match.
        app.router.add_route("*", r"/{tail:[\s\S]*}", self.dispatch)
        # CORS headers go on every response as its headers are sent, so a stream a
        # front-end prepared itself carries them too.
        app.on_response_prepare.append(self._add_cors)
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
        raw_path = request.rel_url.raw_path
        refusal: RefusalRenderer = status_refusal
        # Checked before anything else, on every route (health, metrics, preflights and
        # 404s included), so no front-end can forget it; phrased by the route's renderer.
        host_allowed = self.config.allowed_hosts.allows(request.headers.get("Host"))
        try:
            if request.method == "OPTIONS":
                label.name = PREFLIGHT
                if not host_allowed:
                    raise self._misdirected(request, raw_path)
                return self._options(request, raw_path)
            try:
                match = self.router.match(request.method, raw_path)
            except (NoRoute, MethodNotAllowed):
                if not host_allowed:
                    raise self._misdirected(request, raw_path) from None
                raise
            target = match.target
            label.name = target.name
            if isinstance(target, FrontEndRoute):
                refusal = target.refusal
            if not host_allowed:
                raise self._misdirected(request, raw_path)
            if isinstance(target, Endpoint):
                response = await target.handler(request)
            else:
                response = await self._serve_route(request, target, match.captures)
        except NoRoute:
            response = status_refusal(GatewayError(Code.NOT_FOUND, "Not Found"))
        except MethodNotAllowed as error:
            response = status_refusal(GatewayError(
                Code.UNIMPLEMENTED, "Method Not Allowed", status=405,
                headers={"Allow": ", ".join(error.allowed)},
            ))
        except GatewayError as error:
            response = refusal(error)
        except ConnectionError:
            raise
        except Exception:  # a bug of ours: still an error body, and the log has it
            log.exception("gateway error on %s %s", request.method, raw_path)
            response = refusal(GatewayError(Code.INTERNAL, "internal gateway error"))
        return response

    @staticmethod
    def _misdirected(request: web.Request, raw_path: str) -> GatewayError:
        log.info("refused Host %r on %s %s (not in %s)", request.headers.get("Host", "")[:100],
                 request.method, raw_path[:200], ALLOWED_HOSTS_SETTING)
        return GatewayError(Code.INVALID_ARGUMENT, (
            "this server does not answer to that Host name (a guard against DNS rebinding); "
            f"list the name in {ALLOWED_HOSTS_SETTING} on the server"
        ), status=421)

    async def _serve_route(
        self, request: web.Request, route: FrontEndRoute, captures: dict[str, str]
    ) -> web.StreamResponse:
        """The guards every front-end route gets, then its handler."""
        if route.drains and self.draining:
            raise GatewayError(Code.UNAVAILABLE, "the server is shutting down; retry on another replica")
        body = b""
        if route.reads_body:
            body = await read_guarded_body(
                request,
                self.config.connection_limits.body_read_seconds,
                self.config.max_body_bytes,
                self.config.connection_limits.body_total_seconds,
            )
        return await route.handler(request, captures, body)

    async def _add_cors(self, request: web.Request, response: web.StreamResponse) -> None:
        cors = self._cors_headers(request)
        for name, value in cors:
            if name == "Vary" and "Vary" in response.headers:
                # Added to the route's own Vary (an Agent Card's Host), never in its place.
                value = f"{response.headers['Vary']}, {value}"
            response.headers[name] = value
        if cors and request.method == "OPTIONS" and response.status == 204:
            response.headers["Access-Control-Allow-Methods"] = response.headers.get("Allow", "")
            requested = request.headers.get("Access-Control-Request-Headers")
            if requested:
                response.headers["Access-Control-Allow-Headers"] = requested
            response.headers["Access-Control-Max-Age"] = "600"

    def _options(self, request: web.Request, raw_path: str) -> web.Response:
        methods = self.router.allowed_methods(raw_path)
        if not methods:
            return status_refusal(GatewayError(Code.NOT_FOUND, "Not Found"))
        return web.Response(status=204, headers={"Allow": ", ".join([*methods, "OPTIONS"])})

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

    async def _health(self, request: web.Request) -> web.StreamResponse:
        return await probe(self.invoker, request, liveness=False, draining=self.draining)

    async def _liveness(self, request: web.Request) -> web.StreamResponse:
        return await probe(self.invoker, request, liveness=True, draining=self.draining)


def _greedy_pattern(template_text: str) -> CompiledPattern:
    # "/" has no segment to parse: it is the template with none (the playground's page).
    template = Template("/", (), "") if template_text == "/" else parse_template(template_text)
    return CompiledPattern(template, greedy=frozenset(template.variable_names))
