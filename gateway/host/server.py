"""Start and stop the host: one invoker, one aiohttp site, the front-ends it is given.

:func:`start_host` knows no front-end: the composition root
(:func:`gateway.composition.start_gateway`) lists them and calls it, for
``neuro-san serve`` (in-process invoker) and ``neuro-san gateway`` (standalone, one or
several gRPC replicas) alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import grpc
from aiohttp import web

from gateway.host.app import Host
from gateway.host.client_errors import quiet_client_errors
from gateway.host.config import GatewayConfig
from gateway.host.connection_guard import GuardedAppRunner
from gateway.host.frontends import FrontEndFactory
from gateway.host.tls import channel_credentials, server_ssl_context
from gateway.invokers.channel import GrpcInvoker
from gateway.invokers.interface import Invoker, MethodRef

log = logging.getLogger(__name__)


@dataclass
class GatewayHandle:
    """A running gateway: ``port`` is the bound port (useful with port 0)."""

    port: int
    host: Host
    #: "https" when the gateway serves TLS, else "http".
    scheme: str
    _runner: web.AppRunner
    _invoker: Invoker

    async def drain(self, grace: float) -> None:
        """Refuse new calls (503) and wait up to ``grace`` seconds for the invoker's calls
        in flight; the HTTP server itself keeps running until :meth:`stop`."""
        self.host.draining = True
        await self._invoker.drain(grace)

    async def stop(self) -> None:
        """Refuse new calls (503), let streams in flight finish, close the channel."""
        self.host.draining = True
        try:
            await self._runner.cleanup()
        finally:
            try:
                await self.host.close_frontends()
            finally:
                await self._invoker.close()


LISTEN_BACKLOG = 4096


async def start_host(
    target: str | grpc.aio.Channel | Invoker,
    host: str,
    port: int,
    config: GatewayConfig,
    methods: Mapping[str, MethodRef],
    frontends: Sequence[FrontEndFactory],
    reuse_port: bool = False,
) -> GatewayHandle:
    """Serve ``frontends`` on ``host:port`` in front of the gRPC ``target``.

    ``target`` is ``"host:port"``, several comma-separated ``host:port`` replicas
    (round-robin), any gRPC target string, or an existing ``grpc.aio.Channel`` (which
    stays the caller's to close). TLS on either side comes from ``config``; bad TLS
    files fail here, at start-up. An :class:`Invoker` is used as it is (the in-process
    one inside ``neuro-san serve``); the host closes it when it stops. ``methods``: the
    gRPC methods front-ends may call. ``reuse_port``: several processes share ``port``
    (SO_REUSEPORT; ``serve --workers``).
    """
    quiet_client_errors()  # a malformed request is one WARNING line, not aiohttp's traceback
    # Certificates are read once, off the event loop.
    ssl_context = await asyncio.to_thread(server_ssl_context, config)
    credentials = await asyncio.to_thread(channel_credentials, config) if isinstance(target, str) else None
    described = "the in-process service" if isinstance(target, Invoker) else target
    if isinstance(target, Invoker):
        invoker: Invoker = target
    else:
        invoker = await GrpcInvoker.connect(
            target,
            config.max_body_bytes,
            credentials=credentials,
            server_name=config.target_server_name,
            send_internal_token=config.send_internal_token,
        )
    try:
        app_host = Host(invoker, config, methods, frontends, bound_host=host)
        runner = GuardedAppRunner(
            app_host.make_app(),
            config.connection_limits,
            handler_cancellation=True,  # a client that goes away cancels its gRPC call
            access_log=None,
            shutdown_timeout=config.shutdown_grace_seconds,
        )
        await runner.setup()
        # A deep accept queue: aiohttp's default of 128 drops connections in a burst of
        # thousands of clients, who then wait out TCP's retry timer (seen in the S5 bench).
        site = web.TCPSite(
            runner, host, port, ssl_context=ssl_context, backlog=LISTEN_BACKLOG, reuse_port=reuse_port or None
        )
        await site.start()
    except BaseException:
        await invoker.close()
        raise
    bound = _bound_port(runner, port)
    scheme = "https" if ssl_context is not None else "http"
    mtls = " (client certificates required)" if config.tls_client_ca else ""
    log.info("HTTP gateway on %s://%s:%d%s in front of %s", scheme, host, bound, mtls, described)
    return GatewayHandle(port=bound, host=app_host, scheme=scheme, _runner=runner, _invoker=invoker)


def _bound_port(runner: web.AppRunner, requested: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return requested
