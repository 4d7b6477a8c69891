"""The composition root of the HTTP port: the one list of front-ends the host serves.

The host (:mod:`gateway.host`) imports no front-end; the front-ends import only the
host's seam and the invoker interface. This module, and only it, knows every room: the
REST transcoder (always), MCP (unless ``AGENT_MCP_ENABLE=false``), A2A (unless
``AGENT_A2A_ENABLE=false``), AG-UI (unless ``AGENT_AGUI_ENABLE=false``), and the playground
(or, with it off, neuro-san's health answer at ``/``). ``neuro-san serve`` and the
standalone ``neuro-san gateway`` both start the HTTP port through :func:`start_gateway`, so they serve the same house.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import grpc

from gateway.a2a import a2a_frontends
from gateway.a2a.card_http import CardSettings
from gateway.a2a.push_policy import allowed_networks
from gateway.a2a.push_signing import signer_from_env
from gateway.a2a.switch import a2a_enabled
from gateway.agui import agui_frontends
from gateway.host.bearer import oauth_frontends
from gateway.host.config import GatewayConfig
from gateway.host.frontends import FrontEndFactory
from gateway.host.server import GatewayHandle, start_host
from gateway.invokers.interface import Invoker, methods_of
from gateway.mcp import mcp_frontends
from gateway.playground import make_frontend
from gateway.state import StateSettings
from gateway.transcoder.frontend import default_services, rest_frontend

if TYPE_CHECKING:
    from gateway.a2a.grpc_binding import A2AGrpcBinding


def protocol_frontends(
    *, playground: bool, env: Mapping[str, str] | None = None, a2a_grpc: A2AGrpcBinding | None = None
) -> list[FrontEndFactory]:
    """The front-ends beside REST: MCP (switched by ``AGENT_MCP_ENABLE``), A2A (switched by
    ``AGENT_A2A_ENABLE``), AG-UI (``AGENT_AGUI_ENABLE``), the OAuth
    resource metadata (only with ``AGENT_OAUTH_ISSUER``), the playground. ``a2a_grpc``: A2A's
    gRPC binding, registered on the gRPC server of ``neuro-san serve``, which shares the A2A
    front-end.

    Raises ConfigurationError / ValueError for settings that cannot work (the OAuth ones,
    the shared state's ``AGENT_REDIS_URL``…, ``AGENT_A2A_PUSH_ALLOWED_NETWORKS``, the cards'
    ``AGENT_HTTP_PUBLIC_URL``), so the
    server refuses to start rather than fail on the first A2A or MCP request."""
    StateSettings.from_env(env)
    allowed_networks(env)  # AGENT_A2A_PUSH_ALLOWED_NETWORKS
    signer_from_env(env)  # AGENT_A2A_PUSH_SIGNING_KEY_FILE: readable, and a key we can sign with
    CardSettings.from_env(env)  # AGENT_HTTP_PUBLIC_URL, AGENT_GRPC_PUBLIC_TARGET, AGENT_A2A_CARD_MAX_AGE
    a2a = a2a_frontends(a2a_grpc) if a2a_enabled(env) else []
    return [*mcp_frontends(dict(env) if env is not None else None), *a2a, *agui_frontends(env),
            *oauth_frontends(env), make_frontend(playground)]


async def start_gateway(
    target: str | grpc.aio.Channel | Invoker,
    host: str,
    port: int,
    config: GatewayConfig | None = None,
    frontends: Sequence[FrontEndFactory] = (),
    reuse_port: bool = False,
) -> GatewayHandle:
    """Serve the REST API and ``frontends`` on ``host:port`` in front of the gRPC ``target``.

    ``target`` is ``"host:port"``, several comma-separated ``host:port`` replicas
    (round-robin), any gRPC target string, an existing ``grpc.aio.Channel`` (which stays
    the caller's to close), or an :class:`Invoker` (the in-process one inside
    ``neuro-san serve``). ``frontends``: usually :func:`protocol_frontends`.
    """
    services = default_services()
    # The front-ends' directory is callable through the invoker but has no REST route.
    from neuro_san.api.grpc import directory_pb2  # generated code: loads with the server

    callable_services = [*services, directory_pb2.DESCRIPTOR.services_by_name["DirectoryService"]]
    return await start_host(
        target, host, port, config or GatewayConfig(), methods_of(callable_services),
        [rest_frontend(services), *frontends], reuse_port=reuse_port,
    )
