"""``neuro-san serve``: gRPC and the HTTP gateway in one process (and A2A's gRPC binding,
which joins the two: see :mod:`gateway.a2a.grpc_binding`)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import signal
from typing import Any

from neuro_san.cli.heap import settle_heap
from neuro_san.cli.serve_settings import a2a_served, config_from_args, http_tls_files
from neuro_san.settings import SettingError, current, process_env
from neuro_san.settings.startup import refuse_malformed

log = logging.getLogger("neuro_san.serve")


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve agent networks over gRPC and HTTP",
        description="Serve the networks of AGENT_MANIFEST_FILE (default: the bundled examples) "
        "over gRPC and, through the in-process gateway, HTTP/JSON. Flags override the "
        "environment variables named in their help.",
    )
    parser.add_argument("--host", default=None, help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="gRPC port (AGENT_PORT, default 30011)")
    parser.add_argument(
        "--http-port", type=int, default=None, help="HTTP port (AGENT_HTTP_PORT, default 8080)"
    )
    parser.add_argument("--no-http", action="store_true", help="serve gRPC only")
    _add_playground_argument(parser)
    _add_http_tls_arguments(parser)
    parser.add_argument(
        "--manifest", action="append", default=None, metavar="FILE",
        help="manifest file; repeat for several (AGENT_MANIFEST_FILE, ':'-separated)",
    )
    parser.add_argument(
        "--tool-path", action="append", default=None, metavar="DIR",
        help="root of coded tools; repeat for several (AGENT_TOOL_PATH)",
    )
    parser.add_argument("--server-name", default=None, help="health service name (AGENT_SERVER_NAME)")
    parser.add_argument("--tls-cert", default=None, metavar="PEM", help="TLS certificate chain (AGENT_TLS_CERT_FILE)")
    parser.add_argument("--tls-key", default=None, metavar="PEM", help="TLS private key (AGENT_TLS_KEY_FILE)")
    parser.add_argument(
        "--tls-client-ca", default=None, metavar="PEM",
        help="require client certificates signed by this CA: mutual TLS (AGENT_TLS_CLIENT_CA_FILE)",
    )
    parser.add_argument(
        "--metrics-port", type=int, default=None,
        help="also serve Prometheus /metrics on this port (AGENT_METRICS_PORT; the gateway serves it too)",
    )
    parser.add_argument(
        "--tracing", action="store_true", default=None,
        help="OpenTelemetry spans, exported as OTEL_* / AGENT_TRACING_EXPORT say (AGENT_TRACING=otel; "
        "needs the 'tracing' extra)",
    )
    parser.add_argument("--grace", type=float, default=30.0, help="seconds to let calls finish on SIGTERM")
    from neuro_san.cli.workers import add_workers_argument

    add_workers_argument(parser)
    parser.add_argument(
        "--log-level", default=None,
        help="log level (AGENT_SERVICE_LOG_LEVEL, default INFO)",
    )
    parser.set_defaults(func=run)


def _add_playground_argument(parser: argparse.ArgumentParser) -> None:
    from gateway.playground.switch import add_argument

    add_argument(parser)


def _add_http_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """The gateway's ``--http-tls-*`` flags; without them HTTP reuses the gRPC TLS files."""
    from gateway.cli import add_http_tls_arguments

    add_http_tls_arguments(parser, "Each file not given defaults to its gRPC --tls-* twin.")
    parser.add_argument(
        "--http-plaintext", action="store_true",
        help="serve plain HTTP even when gRPC uses TLS (e.g. behind a proxy that terminates TLS)",
    )


def _log_level(args: argparse.Namespace) -> str:
    """--log-level, else AGENT_SERVICE_LOG_LEVEL; INFO while a malformed one is being refused."""
    try:
        return str(args.log_level or current().value("AGENT_SERVICE_LOG_LEVEL"))
    except SettingError:
        return "INFO"


def run(args: argparse.Namespace) -> int:
    from neuro_san.cli import workers
    from neuro_san.cli.event_loop import loop_runner
    from neuro_san.service.logs import configure_logging

    configure_logging(_log_level(args))
    if refuse_malformed("serve", log):
        return 2
    if args.metrics_port is None:
        args.metrics_port = current().value("AGENT_METRICS_PORT")
    count = workers.worker_count(args)
    if count is None:
        return 2
    try:
        runner = loop_runner()  # uvloop with the `fast` extra, unless AGENT_EVENT_LOOP says otherwise
    except ValueError as error:
        log.error("not starting: %s", error)
        return 2
    if count > 1:
        return workers.supervise(args, count)
    workers.tag_worker_logs()
    return int(runner(_serve(args)))


async def _serve(args: argparse.Namespace) -> int:
    from neuro_san.core.errors import ConfigurationError
    from neuro_san.core.internal_metadata import load_shared_token

    try:
        config = config_from_args(args)
        serve_a2a = a2a_served(args)
        load_shared_token(process_env())  # AGENT_INTERNAL_TOKEN: standalone gateways' calls believed
    except (ValueError, ConfigurationError) as bad:  # a bad setting: say which, do not start
        log.error("not starting: %s", bad)
        return 2
    from gateway.a2a.switch import sdk_spans_follow
    from neuro_san.cli import workers

    sdk_spans_follow(config.tracing)  # before anything imports the a2a-sdk (front-end, A2A tools)
    from neuro_san.client.remote import close_all, remote_agent
    from neuro_san.service.server import AgentServer
    from neuro_san.studio import plugin as studio

    # neuro-san-studio's middleware classes are an application on the server's middleware
    # registry: the command line plugs them in before any network loads.
    studio.register()
    config.reuse_port = workers.is_worker()
    in_process = workers.gateway_in_process()

    try:
        # The server's grpc:// and http(s):// tools are the client library's remote agents:
        # the service imports no client, the command line composes the two.
        server = AgentServer(config, remote=remote_agent, remote_close=close_all)
    except ConfigurationError as refused:  # AGENT_LLM_OVERRIDE, AGENT_LLM_INFO_FILE, MCP_SERVERS_INFO_FILE…
        log.error("cannot start: %s", refused.message)
        return 2
    for error in server.registry.errors:
        log.error("not serving: %s", error)
    a2a_grpc = None
    if serve_a2a:
        # A2A's gRPC binding on the gRPC port, registered before the server starts. It shares
        # the HTTP port's A2A front-end (task store, executor, cards), so it is served only
        # with HTTP on; it reaches the agents through the gateway's invoker, as HTTP does.
        from gateway.a2a.grpc_binding import A2AGrpcBinding

        a2a_grpc = A2AGrpcBinding()
        server.add_generic_handlers([a2a_grpc])
    try:
        await server.start()
    except (ValueError, OSError) as error:  # half a TLS pair, unreadable files
        log.error("gRPC server cannot start: %s", error)
        return 2
    except RuntimeError as error:  # grpcio says "Failed to bind to address …" and nothing else
        if "bind" not in str(error):
            raise
        log.error("gRPC server cannot start: port %s:%d is in use or not allowed (AGENT_PORT, --port): "
                  "stop the other server or choose another port", config.host, config.port)
        return 2
    if a2a_grpc is not None:
        a2a_grpc.port = server.port  # for the cards' gRPC interface
    metrics_port = 0
    if args.metrics_port:
        from prometheus_client import start_http_server

        metrics_server, _thread = start_http_server(args.metrics_port, addr=config.host)
        metrics_port = metrics_server.server_port
        log.info("Prometheus metrics on %s:%d/metrics", config.host, metrics_port)
    gateway = None
    local = None
    playground = False
    if not args.no_http:
        from gateway import GatewayConfig
        from gateway.composition import protocol_frontends, start_gateway
        from gateway.invokers.inprocess import InProcessInvoker
        from gateway.playground import playground_enabled

        if in_process:  # the gateway calls the service layer directly, no gRPC hop
            local = InProcessInvoker(server.handlers.generic, server.health, config.max_message_bytes)

        try:
            playground = playground_enabled(args.no_playground)
        except ValueError as error:
            log.error("%s", error)
            await server.stop(0)
            return 2

        http_port = args.http_port
        if http_port is None:
            http_port = current().value("AGENT_HTTP_PORT")
        tls_cert, tls_key, tls_client_ca = http_tls_files(args, config)
        try:
            # The private internal target is plaintext: only HTTP clients see TLS.
            gateway = await start_gateway(
                local or server.internal_target,
                config.host,
                http_port,
                GatewayConfig(
                    max_body_bytes=config.max_message_bytes,
                    forwarded_headers=config.forwarded_metadata,
                    keepalive_seconds=config.keepalive_seconds,
                    tls_cert=tls_cert,
                    tls_key=tls_key,
                    tls_client_ca=tls_client_ca,
                    send_internal_token=True,  # its own server, over the private socket
                ),
                reuse_port=config.reuse_port,
                frontends=protocol_frontends(playground=playground, a2a_grpc=a2a_grpc),
            )
        except OSError as error:  # bad TLS files (ssl.SSLError is an OSError), port taken
            if error.errno == errno.EADDRINUSE:
                log.error("HTTP gateway cannot start: port %s:%d is in use (AGENT_HTTP_PORT, --http-port): "
                          "stop the other server or choose another port", config.host, http_port)
            else:
                log.error("HTTP gateway cannot start: %s", error)
            await server.stop(0)
            return 2
        except ValueError as error:  # a setting the install cannot honour (AGENT_REDIS_URL without redis)
            log.error("HTTP gateway cannot start: %s", error)
            await server.stop(0)
            return 2
    from gateway.state import warn_when_unreachable
    from neuro_san.cli.startup_line import urls_line

    await warn_when_unreachable()  # AGENT_REDIS_URL that does not answer: one line now, not at first use

    print(urls_line(config.host, server.port, gateway, playground), flush=True)
    settle_heap()  # start-up's objects out of the collector's way, before any traffic burst
    # One line machines can wait for (tests, scripts): the ports actually bound.
    workers.announce_ready(f"READY grpc={server.port} http={gateway.port if gateway else 0} metrics={metrics_port}")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    orphan_watch = asyncio.create_task(workers.stop_when_orphaned(stop))  # a worker outlives no parent
    await stop.wait()
    orphan_watch.cancel()
    log.info("shutting down: draining for up to %.0f s", args.grace)
    # Health goes NOT_SERVING first, so the gateway answers 503 to new requests while
    # the calls in flight (gRPC and HTTP alike) finish within the grace period.
    drain_gateway = gateway.drain if gateway is not None else None
    await server.stop(args.grace, drain_local=drain_gateway)
    if gateway is not None:
        await gateway.stop()
    return 0
