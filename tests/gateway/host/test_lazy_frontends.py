"""The MCP and A2A front-ends load on their first request, not at start-up
(:class:`gateway.host.frontends.LazyFrontEnd`): start-up does not import their SDKs, the real
front-end is built exactly once however many first requests race, and a drift between
the declared routes and the real ones is caught when it loads."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterable
from typing import Any, cast

import pytest
from aiohttp import web

from gateway.host.frontends import FrontEndContext, FrontEndRoute, LazyFrontEnd, RouteSpec
from tests.support.servers import ROOT

_STARTUP_IMPORTS = """
import json, sys
import neuro_san.cli.serve, neuro_san.service.server, gateway.host.server, gateway.invokers.inprocess
from gateway.a2a import a2a_frontends
from gateway.mcp import mcp_frontends
factories = [*mcp_frontends({"AGENT_MCP_ENABLE": "true"}), *a2a_frontends()]
heavy = ("a2a", "starlette", "mcp_types", "mcp", "httpx")
print(json.dumps({"factories": len(factories), "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_start_up_imports_neither_the_a2a_sdk_nor_the_mcp_types() -> None:
    done = subprocess.run([sys.executable, "-c", _STARTUP_IMPORTS], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"factories": 2, "loaded": []}


class _Real:
    made = 0

    def __init__(self, context: Any) -> None:
        type(self).made += 1
        self.closed = False

    def routes(self) -> Iterable[FrontEndRoute]:
        return [FrontEndRoute("GET", "/x/{agent}", "x", self.answer)]

    async def answer(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        return web.Response(text=captures["agent"])

    async def close(self) -> None:
        self.closed = True


def _context() -> FrontEndContext:
    return cast(FrontEndContext, object())  # the wrapper only hands it to the real factory


def test_the_first_requests_build_the_front_end_once() -> None:
    _Real.made = 0
    lazy = LazyFrontEnd(_context(), "test", [RouteSpec("GET", "/x/{agent}", "x")], lambda: _Real)
    (route,) = lazy.routes()
    assert (route.http_method, route.template, route.name, _Real.made) == ("GET", "/x/{agent}", "x", 0)

    async def race() -> list[str]:
        request = cast(web.Request, None)
        replies = await asyncio.gather(*(route.handler(request, {"agent": str(n)}, b"") for n in range(20)))
        await lazy.close()
        return [cast(web.Response, reply).text or "" for reply in replies]

    assert asyncio.run(race()) == [str(n) for n in range(20)]
    assert _Real.made == 1


def test_declared_routes_that_drift_from_the_real_ones_fail_loudly() -> None:
    lazy = LazyFrontEnd(_context(), "test", [RouteSpec("POST", "/x/{agent}", "x")], lambda: _Real)
    (route,) = lazy.routes()
    with pytest.raises(RuntimeError, match="routes differ"):
        asyncio.run(route.handler(cast(web.Request, None), {"agent": "a"}, b""))


def test_closing_an_unused_front_end_does_not_load_it() -> None:
    loads: list[int] = []

    def load() -> Any:
        loads.append(1)
        return _Real

    asyncio.run(LazyFrontEnd(_context(), "test", [RouteSpec("GET", "/x/{agent}", "x")], load).close())
    assert loads == []


def test_the_declared_routes_are_the_real_front_ends_routes() -> None:
    """What the gateway's table holds before loading is what each front-end serves after."""
    from gateway.a2a import A2A_ROUTES
    from gateway.a2a.frontend import A2AFrontEnd
    from gateway.mcp import MCP_ROUTES
    from gateway.mcp.frontend import McpFrontEnd

    for declared, routes in ((A2A_ROUTES, A2AFrontEnd.routes), (MCP_ROUTES, McpFrontEnd.routes)):
        real = routes(cast(Any, _Unbound()))
        assert {RouteSpec(r.http_method, r.template, r.name, r.refusal, r.takes_body, r.drains)
                for r in real} == set(declared)


class _Unbound:
    """Stands in for ``self`` so ``routes()`` can be read without building the front-end."""

    def __getattr__(self, name: str) -> Any:
        return name
