"""The seam every front-end on the HTTP port mounts through.

A front-end (the REST transcoder, MCP, A2A, the playground) is a room of its own. It
never reaches the service layer directly: it gets a :class:`FrontEndContext` with the
invoker (in-process inside ``neuro-san serve``, a gRPC channel in the standalone
gateway), so authentication, admission, request ids, limits and metrics are the same for
every call. It answers with :class:`FrontEndRoute`\\ s that the host adds to its one
route table.

What a front-end does *not* do is host work. The host matches the route, answers
OPTIONS/CORS, 404 and 405, refuses new work while draining, and reads the request body
through its one guarded reader (:mod:`gateway.host.body`: the body-read deadline and
the size limit) before the handler runs; the handler gets the body as bytes and never
reads the request itself. A refusal the host decides is rendered by the route's
``refusal`` (a Status body for REST, a JSON-RPC error for MCP and A2A), so a front-end
added later gets every guard without doing anything.

A front-end is made by a factory, called once when the gateway starts::

    def make_frontend(context: FrontEndContext) -> FrontEnd: ...

The composition root (:mod:`gateway.composition`) lists the factories.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from gateway.host.errors import GatewayError, status_refusal
from gateway.host.pattern import CompiledPattern
from neuro_san.core.internal_metadata import CLIENT_ADDRESS_KEY

if TYPE_CHECKING:
    from gateway.host.config import GatewayConfig
    from gateway.host.metadata import HeaderMapper
    from gateway.invokers.interface import Invoker, MethodRef

log = logging.getLogger(__name__)

#: The metadata key of the HTTP client's address (see ``FrontEndContext.metadata``).
CLIENT_ADDRESS_METADATA = CLIENT_ADDRESS_KEY

#: A handler gets the request, the route template's captures and the body the host read
#: (``b""`` for a route that takes none).
FrontEndHandler = Callable[[web.Request, dict[str, str], bytes], Awaitable[web.StreamResponse]]
#: How a route phrases a refusal the host decided (draining, body too large or too slow).
RefusalRenderer = Callable[[GatewayError], web.StreamResponse]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True, slots=True)
class FrontEndRoute:
    """One path a front-end serves.

    ``template`` is a ``google.api.http`` path template; a front-end's single-segment
    variables are greedy (``/a2a/{agent}/card`` captures ``deep/math_guy``). ``pattern``,
    when given, is used as compiled (the REST routes bring their own). ``name`` is the
    metrics label. ``takes_body``: the host reads the body for the handler (default: for
    POST, PUT and PATCH). ``drains``: refused with 503 while the server drains.
    """

    http_method: str
    template: str
    name: str
    handler: FrontEndHandler
    refusal: RefusalRenderer = status_refusal
    takes_body: bool | None = None
    drains: bool = True
    pattern: CompiledPattern | None = field(default=None, compare=False)

    @property
    def reads_body(self) -> bool:
        return self.http_method in _BODY_METHODS if self.takes_body is None else self.takes_body


class FrontEnd(Protocol):
    """A protocol served on the HTTP port through the invoker seam."""

    def routes(self) -> Iterable[FrontEndRoute]:
        """The paths it serves; called once, when the host builds its route table."""
        ...

    async def close(self) -> None:
        """Release what it holds (sessions, tasks); called when the gateway stops."""
        ...


@dataclass(frozen=True, slots=True)
class FrontEndContext:
    """What a front-end may use: the invoker and the gateway's own settings."""

    invoker: Invoker
    config: GatewayConfig
    #: Request headers → gRPC metadata (``Authorization``, ``request_id``… are forwarded so
    #: the service authenticates and logs the call).
    headers: HeaderMapper
    #: True once the gateway drains (the host already refuses routes that drain).
    is_draining: Callable[[], bool]
    #: Every gRPC method the HTTP port may call, by path (``/pkg.Service/Method``).
    methods: Mapping[str, MethodRef]

    def metadata(self, request: web.Request) -> list[tuple[str, str | bytes]]:
        """The caller's headers as gRPC metadata, exactly as the REST routes send them: the
        forwarded headers and ``Authorization``, then the client's address (per-address rate
        limits when API keys are off; appended last, so a forged header of that name loses).

        The rules of the protocol front-ends (a private network absent unless the key names
        it, the public directory) are not added here: they are fields of the agents facade's
        ``Caller``, which alone turns them into what the service reads.
        """
        metadata = list(self.headers.to_metadata(request.headers))
        if request.remote:
            metadata.append((CLIENT_ADDRESS_METADATA, request.remote))
        return metadata

    def method(self, service: str, method: str) -> Callable[..., Any]:
        """The invoker's callable for ``service``'s ``method`` (e.g. AgentService, StreamingChat).

        Called as a grpc.aio multicallable: ``call(request, metadata=..., timeout=...)``;
        unary methods are awaited, streaming ones iterated.
        """
        for path, ref in self.methods.items():
            if path.endswith(f".{service}/{method}"):
                return self.invoker.callable_for(ref)
        raise LookupError(f"no method {service}/{method}")


FrontEndFactory = Callable[[FrontEndContext], FrontEnd]


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """A front-end route without its handler: what the host's table needs before the
    front-end itself is loaded (see :class:`LazyFrontEnd`)."""

    http_method: str
    template: str
    name: str
    refusal: RefusalRenderer = status_refusal
    takes_body: bool | None = None
    drains: bool = True


class LazyFrontEnd:
    """A front-end whose package is imported on its first request, not at start-up.

    The A2A SDK (Starlette, httpx, pydantic models) and the MCP types take about 1.5 s to
    import, three times what the rest of ``neuro-san serve`` needs to become healthy, and
    a server whose callers never speak those protocols should not pay for them. The routes
    are declared up front (``specs``, with their refusals and body rules) so the host
    guards them as any route; the first request imports the package in a worker thread
    (the event loop keeps serving), builds the real front-end with the same context and
    hands every request to it.
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
        self._handlers: dict[tuple[str, str, str], FrontEndHandler] = {}

    def routes(self) -> Iterable[FrontEndRoute]:
        return [
            FrontEndRoute(s.http_method, s.template, s.name, self._forwarder(s),
                          refusal=s.refusal, takes_body=s.takes_body, drains=s.drains)
            for s in self._specs
        ]

    async def close(self) -> None:
        if self._frontend is not None:
            await self._frontend.close()

    def _forwarder(self, spec: RouteSpec) -> FrontEndHandler:
        key = _key(spec)

        async def forward(request: web.Request, captures: dict[str, str], body: bytes) -> web.StreamResponse:
            if self._frontend is None:
                await self._load_once()
            return await self._handlers[key](request, captures, body)

        return forward

    async def _load_once(self) -> None:
        async with self._lock:
            if self._frontend is not None:
                return
            started = time.perf_counter()
            factory = await asyncio.to_thread(self._load)
            frontend = factory(self._context)
            loaded = {_key(r): r for r in frontend.routes()}
            declared = {_key(s): s for s in self._specs}
            if set(loaded) != set(declared) or any(_rules(loaded[k]) != _rules(declared[k]) for k in declared):
                # A programming error (the declared routes drifted from the real ones), not a
                # caller's: fail loudly rather than serve a table that lies.
                raise RuntimeError(f"the {self._label} front-end's routes differ from those declared for it")
            self._handlers = {k: r.handler for k, r in loaded.items()}
            self._frontend = frontend
            elapsed_ms = 1000 * (time.perf_counter() - started)
            log.info("%s front-end loaded on its first request (%.0f ms)", self._label, elapsed_ms)


def _key(route: FrontEndRoute | RouteSpec) -> tuple[str, str, str]:
    return route.http_method, route.template, route.name


def _rules(route: FrontEndRoute | RouteSpec) -> tuple[Any, ...]:
    return route.refusal, route.takes_body, route.drains


def lazy_frontend(label: str, specs: Sequence[RouteSpec], load: Callable[[], FrontEndFactory]) -> FrontEndFactory:
    """A factory for :class:`LazyFrontEnd`: ``load`` imports the package and returns its factory."""
    return lambda context: LazyFrontEnd(context, label, specs, load)
