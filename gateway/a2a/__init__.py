"""A2A (Agent2Agent protocol) front-end: every public network as an A2A agent.

Mounted on the HTTP port through :mod:`gateway.host.frontends`; see :mod:`gateway.a2a.frontend`.
:func:`a2a_frontends` is what ``neuro-san serve`` and the standalone gateway mount: the
routes are known at start-up, the A2A SDK is imported on the first A2A request
(:class:`gateway.host.frontends.LazyFrontEnd`), so a server nobody calls over A2A starts
without it. Inside ``neuro-san serve`` the front-end is shared with A2A's gRPC binding
(:mod:`gateway.a2a.grpc_binding`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.a2a.routes import A2A_ROUTES
from gateway.host.frontends import FrontEndFactory, lazy_frontend

if TYPE_CHECKING:
    from gateway.a2a.frontend import A2AFrontEnd, make_a2a_frontend
    from gateway.a2a.grpc_binding import A2AGrpcBinding


def _load() -> FrontEndFactory:
    from gateway.a2a.frontend import make_a2a_frontend

    return make_a2a_frontend


def a2a_frontends(grpc: A2AGrpcBinding | None = None) -> list[FrontEndFactory]:
    """The A2A front-end's factory, loaded on its first request; with ``grpc``, the front-end
    that binding shares (and whose cards list it)."""
    if grpc is not None:
        return grpc.frontends()
    return [lazy_frontend("A2A", A2A_ROUTES, _load)]


def __getattr__(name: str) -> Any:
    if name in ("A2AFrontEnd", "make_a2a_frontend"):
        from gateway.a2a import frontend

        return getattr(frontend, name)
    raise AttributeError(name)


__all__ = ["A2A_ROUTES", "A2AFrontEnd", "a2a_frontends", "make_a2a_frontend"]
