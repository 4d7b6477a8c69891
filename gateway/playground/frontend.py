"""The playground front-end: ``GET /`` and ``GET /playground/{path}`` on the HTTP port.

``/`` is shared with health: neuro-san answers health there, and probes configured for
it must keep working, so only a request that accepts ``text/html`` (a browser) gets the
page; everything else gets :func:`~gateway.playground.root_health.root_health`. With the
playground turned off, ``/`` answers health to everyone and no asset is served.

Every asset goes out with a strict Content-Security-Policy (scripts and styles from this
origin only, no inline script, no eval, Trusted Types so no string can become HTML,
connections to this origin only) and ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiohttp import web

from gateway.host.errors import GatewayError
from gateway.host.frontends import FrontEndContext, FrontEndFactory, FrontEndRoute
from gateway.host.responses import dumps, json_response
from gateway.playground.assets import AssetTable, load_assets
from gateway.playground.root_health import root_health
from neuro_san.core.errors import Code

log = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
])

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def wants_html(request: web.Request) -> bool:
    """True for a browser's navigation: its Accept names text/html (curl's */* does not)."""
    return "text/html" in request.headers.get("Accept", "").lower()


class PlaygroundFrontEnd:
    """Serves the page (when enabled) and the health answer at ``/``."""

    def __init__(self, context: FrontEndContext, enabled: bool, assets: AssetTable | None = None) -> None:
        self.context = context
        self.enabled = enabled
        self.assets = assets if assets is not None else (load_assets() if enabled else AssetTable({}, ()))
        if enabled and self.assets.missing:
            log.error(
                "playground assets missing from the installed package: %s; the page at / answers 503 "
                "until the package is reinstalled (pip install with its package data)",
                ", ".join(self.assets.missing),
            )

    def routes(self) -> Iterable[FrontEndRoute]:
        # Not refused while draining: "/" is also neuro-san's health answer, which says so.
        routes = [FrontEndRoute("GET", "/", "root", self.root, drains=False)]
        if self.enabled:
            routes.append(FrontEndRoute("GET", "/playground/{path=**}", "playground", self.asset, drains=False))
        return routes

    async def root(self, request: web.Request, _captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        if not self.enabled or not wants_html(request):
            health = await root_health(self.context.invoker, self.context.is_draining())
            if self.enabled:
                health.headers["Vary"] = "Accept"
            return health
        page = self._serve("index.html", request)
        page.headers["Vary"] = "Accept"
        return page

    async def asset(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        return self._serve(captures.get("path", ""), request)

    def _serve(self, relative: str, request: web.Request) -> web.Response:
        if self.assets.missing:
            return json_response(503, dumps({
                "error": "playground assets are missing from this installation",
                "missing": list(self.assets.missing),
            }))
        asset = self.assets.get(relative)
        if asset is None:
            raise GatewayError(Code.NOT_FOUND, "Not Found")
        headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
        if request.headers.get("If-None-Match") == asset.etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=asset.body, headers={**headers, "Content-Type": asset.content_type})

    async def close(self) -> None:
        return None


def make_frontend(enabled: bool = True) -> FrontEndFactory:
    """A factory for ``start_gateway(frontends=[...])``."""

    def factory(context: FrontEndContext) -> PlaygroundFrontEnd:
        return PlaygroundFrontEnd(context, enabled)

    return factory

