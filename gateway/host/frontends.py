"""The seam for protocol front-ends mounted on the HTTP port beside the REST routes.

A front-end (the MCP server, A2A, the playground) is a package of its own. It never
reaches the service layer directly: it gets a :class:`FrontEndContext` with the
gateway's invoker (in-process inside ``neuro-san serve``, a gRPC channel in the
standalone gateway), so authentication, admission, request ids, limits and metrics are
the same as for every REST call. It answers with :class:`FrontEndRoute`\\ s that the
gateway adds to its one route table (so 404/405/OPTIONS and the metrics label work as
for every other path).

A front-end is made by a factory, called once when the gateway starts::

    def make_frontend(context: FrontEndContext) -> FrontEnd: ...

and passed to ``start_gateway(..., frontends=[make_frontend])``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

if TYPE_CHECKING:
    from gateway.config import GatewayConfig
    from gateway.host.metadata import HeaderMapper
    from gateway.invokers.channel import Invoker
    from gateway.transcoder.routes import Route

log = logging.getLogger(__name__)

#: The metadata key of the HTTP client's address (see ``FrontEndContext.metadata``).
CLIENT_ADDRESS_METADATA = "x-neuro-san-client"

#: A front-end handler gets the request and the route template's captures.
FrontEndHandler = Callable[[web.Request, dict[str, str]], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class FrontEndRoute:
    """One path a front-end serves.

    ``template`` is a ``google.api.http`` path template; its single-segment variables are
    greedy (``/a2a/{agent}/card`` captures ``deep/math_guy``), as the REST routes' are.
    ``name`` is the metrics label of the route.
    """

    http_method: str
    template: str
    name: str
    handler: FrontEndHandler


class FrontEnd(Protocol):
    """A protocol served on the HTTP port through the invoker seam."""

    def routes(self) -> Iterable[FrontEndRoute]:
        """The paths it serves; called once, when the gateway builds its route table."""
        ...

    async def close(self) -> None:
        """Release what it holds (sessions, tasks); called when the gateway stops."""
        ...


@dataclass(frozen=True, slots=True)
class FrontEndContext:
    """What a front-end may use: the invoker and the gateway's own settings."""

    invoker: Invoker
    config: GatewayConfig
    #: Request headers → gRPC metadata, as the REST routes map them (``Authorization``,
    #: ``request_id``… are forwarded so the service authenticates and logs the call).
    headers: HeaderMapper
    #: True once the gateway drains: refuse new work with 503 / UNAVAILABLE.
    is_draining: Callable[[], bool]
    #: gRPC method path (``/pkg.Service/Method``) → the REST route bound to it.
    routes_by_path: dict[str, Route]

    def metadata(self, request: web.Request) -> list[tuple[str, str | bytes]]:
        """The caller's headers as gRPC metadata, exactly as the REST routes send them: the
        forwarded headers and ``Authorization``, then the client's address (per-address rate
        limits when API keys are off; appended last, so a forged header of that name loses)."""
        metadata = list(self.headers.to_metadata(request.headers))
        if request.remote:
            metadata.append((CLIENT_ADDRESS_METADATA, request.remote))
        return metadata

    def method(self, service: str, method: str) -> Callable[..., Any]:
        """The invoker's callable for ``service``'s ``method`` (e.g. AgentService, StreamingChat).

        Called as a grpc.aio multicallable: ``call(request, metadata=..., timeout=...)``;
        unary methods are awaited, streaming ones iterated.
        """
        for path, route in self.routes_by_path.items():
            if path.endswith(f".{service}/{method}"):
                return self.invoker.callable_for(route)
        raise LookupError(f"no route for {service}/{method}")


FrontEndFactory = Callable[[FrontEndContext], FrontEnd]


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """A front-end route without its handler: what the gateway's table needs before the
    front-end itself is loaded (see :class:`LazyFrontEnd`)."""

    http_method: str
    template: str
    name: str


class LazyFrontEnd:
    """A front-end whose package is imported on its first request, not at start-up.

    The A2A SDK (Starlette, httpx, pydantic models) and the MCP types take about 1.5 s to
    import, three times what the rest of ``neuro-san serve`` needs to become healthy, and
    a server whose callers never speak those protocols should not pay for them. The routes
    are declared up front (``specs``) so 404/405 and metrics work as for any route; the
    first request imports the package in a worker thread (the event loop keeps serving),
    builds the real front-end with the same context and hands every request to it.
    """

    def __init__(
        self, context: FrontEndContext, label: str, specs: Sequence[RouteSpec], load: Callable[[], FrontEndFactory]
    ) -> None:
        self._context = context
        self._label = label
        self._specs = tuple(specs)
        self._load = load
        self._lock = asyncio.Lock()
        self._frontend: FrontEnd | None = None
        self._handlers: dict[RouteSpec, FrontEndHandler] = {}

    def routes(self) -> Iterable[FrontEndRoute]:
        return [FrontEndRoute(s.http_method, s.template, s.name, self._forwarder(s)) for s in self._specs]

    async def close(self) -> None:
        if self._frontend is not None:
            await self._frontend.close()

    def _forwarder(self, spec: RouteSpec) -> FrontEndHandler:
        async def forward(request: web.Request, captures: dict[str, str]) -> web.StreamResponse:
            if self._frontend is None:
                await self._load_once()
            return await self._handlers[spec](request, captures)

        return forward

    async def _load_once(self) -> None:
        async with self._lock:
            if self._frontend is not None:
                return
            started = time.perf_counter()
            factory = await asyncio.to_thread(self._load)
            frontend = factory(self._context)
            handlers = {RouteSpec(r.http_method, r.template, r.name): r.handler for r in frontend.routes()}
            if set(handlers) != set(self._specs):
                # A programming error (the declared routes drifted from the real ones), not a
                # caller's: fail loudly rather than serve a table that lies.
                raise RuntimeError(f"the {self._label} front-end's routes differ from those declared for it")
            self._handlers, self._frontend = handlers, frontend
            elapsed_ms = 1000 * (time.perf_counter() - started)
            log.info("%s front-end loaded on its first request (%.0f ms)", self._label, elapsed_ms)


def lazy_frontend(label: str, specs: Sequence[RouteSpec], load: Callable[[], FrontEndFactory]) -> FrontEndFactory:
    """A factory for :class:`LazyFrontEnd`: ``load`` imports the package and returns its factory."""
    return lambda context: LazyFrontEnd(context, label, specs, load)
