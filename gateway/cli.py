"""``neuro-san gateway``: the HTTP/JSON gateway alone, in front of gRPC replicas.

``add_arguments`` adds the options to any parser; ``run`` serves until SIGTERM or
SIGINT. Also runnable as ``python -m gateway --target HOST:PORT[,HOST:PORT...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import ssl
from pathlib import Path

from gateway.host.config import DEFAULT_MAX_BODY_BYTES, GatewayConfig, parse_header_list
from gateway.host.tls import TlsConfigError
from gateway.playground.switch import add_argument as add_playground_argument
from neuro_san.core.errors import ConfigurationError
from neuro_san.core.internal_metadata import load_shared_token
from neuro_san.settings import activate, current, process_env, snapshot

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gateway's command-line options. Environment variables give the defaults, resolved
    by :func:`resolve_defaults` when the gateway runs, once a malformed one has been refused."""
    parser.add_argument(
        "--target",
        default=None,
        help="gRPC server as host:port, or several comma-separated for round-robin "
        "(AGENT_GRPC_TARGET, default 127.0.0.1:AGENT_PORT)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="HTTP port (default: AGENT_HTTP_PORT or 8080; 0 picks a free one)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest request body and gRPC message (default 16 MiB)",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="an origin allowed by CORS (repeatable; '*' for any)",
    )
    parser.add_argument(
        "--max-timeout-seconds",
        type=float,
        default=None,
        help="cap on Grpc-Timeout, and the deadline when a request sends none",
    )
    add_http_tls_arguments(parser)
    add_playground_argument(parser)
    tls = parser.add_argument_group("TLS to the gRPC target")
    tls.add_argument(
        "--target-tls", action="store_true", default=None,
        help="talk TLS to the target, trusting the system roots (AGENT_GRPC_TARGET_TLS=true)",
    )
    tls.add_argument(
        "--target-ca", default=process_env().get("AGENT_GRPC_TARGET_CA_FILE"), metavar="PEM",
        help="trust this CA for the target's certificate; implies --target-tls (AGENT_GRPC_TARGET_CA_FILE)",
    )
    tls.add_argument(
        "--target-cert", default=process_env().get("AGENT_GRPC_TARGET_CERT_FILE"), metavar="PEM",
        help="client certificate chain for a server that requires one (mTLS) (AGENT_GRPC_TARGET_CERT_FILE)",
    )
    tls.add_argument(
        "--target-key", default=process_env().get("AGENT_GRPC_TARGET_KEY_FILE"), metavar="PEM",
        help="the client certificate's private key (AGENT_GRPC_TARGET_KEY_FILE)",
    )
    tls.add_argument(
        "--target-server-name", default=process_env().get("AGENT_GRPC_TARGET_SERVER_NAME"), metavar="NAME",
        help="name to check the target's certificate against, when it is not the target's host "
        "(AGENT_GRPC_TARGET_SERVER_NAME)",
    )


def add_http_tls_arguments(parser: argparse.ArgumentParser, description: str | None = None) -> None:
    """``--http-tls-*``: HTTPS (and mTLS) on the gateway's own port; shared with ``serve``.

    Defaults are ``None`` when the environment says nothing, so ``serve`` can tell
    "not given" from "given" and fall back to its gRPC certificate.
    """
    group = parser.add_argument_group("HTTPS on the gateway", description)
    group.add_argument(
        "--http-tls-cert", default=process_env().get("AGENT_HTTP_TLS_CERT_FILE") or None, metavar="PEM",
        help="serve HTTPS with this certificate chain (AGENT_HTTP_TLS_CERT_FILE)",
    )
    group.add_argument(
        "--http-tls-key", default=process_env().get("AGENT_HTTP_TLS_KEY_FILE") or None, metavar="PEM",
        help="the certificate's private key (AGENT_HTTP_TLS_KEY_FILE)",
    )
    group.add_argument(
        "--http-tls-client-ca", default=process_env().get("AGENT_HTTP_TLS_CLIENT_CA_FILE") or None, metavar="PEM",
        help="require HTTP client certificates signed by this CA: mutual TLS (AGENT_HTTP_TLS_CLIENT_CA_FILE)",
    )


def resolve_defaults(args: argparse.Namespace) -> None:
    """The defaults of the flags not given, from the settings (typed: checked already)."""
    settings = current()
    if args.target is None:
        args.target = settings.value("AGENT_GRPC_TARGET") or f"127.0.0.1:{settings.value('AGENT_PORT')}"
    if args.port is None:
        args.port = settings.value("AGENT_HTTP_PORT")
    if args.target_tls is None:
        args.target_tls = settings.value("AGENT_GRPC_TARGET_TLS")


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def config_from_args(args: argparse.Namespace) -> GatewayConfig:
    forwarded = process_env().get("AGENT_FORWARDED_REQUEST_METADATA")
    config = GatewayConfig(
        max_body_bytes=args.max_body_bytes,
        cors_origins=tuple(args.cors_origin or ()),
        max_timeout_seconds=getattr(args, "max_timeout_seconds", None),
        tls_cert=_path(args.http_tls_cert),
        tls_key=_path(args.http_tls_key),
        tls_client_ca=_path(args.http_tls_client_ca),
        target_tls=args.target_tls,
        target_ca=_path(args.target_ca),
        target_cert=_path(args.target_cert),
        target_key=_path(args.target_key),
        target_server_name=args.target_server_name or None,
        # The server believes this gateway's internal keys only when both share the secret.
        send_internal_token=load_shared_token(process_env()),
    )
    if forwarded is not None:
        config.forwarded_headers = parse_header_list(forwarded)
    return config


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; 0 on a clean stop."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from neuro_san.settings.startup import refuse_malformed

    if refuse_malformed("gateway", log):
        return 2
    resolve_defaults(args)
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        pass
    # Bad TLS files, port taken, a bad AGENT_PLAYGROUND: say so, no traceback.
    except (TlsConfigError, ssl.SSLError, OSError, ValueError, ConfigurationError) as error:
        log.error("gateway cannot start: %s", error)
        return 2
    return 0


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    # aiohttp, grpc and the descriptors load only when the gateway runs, not for --help.
    from gateway.a2a.switch import sdk_spans_follow
    from gateway.composition import protocol_frontends, start_gateway
    from gateway.playground import playground_enabled

    sdk_spans_follow(False)  # the standalone gateway opens no spans of its own
    frontends = protocol_frontends(playground=playground_enabled(getattr(args, "no_playground", False)))
    handle = await start_gateway(args.target, args.host, args.port, config_from_args(args), frontends=frontends)
    from gateway.state import warn_when_unreachable

    await warn_when_unreachable()  # AGENT_REDIS_URL that does not answer: one line now
    # Tests and supervisors read the bound port from this line.
    print(f"gateway listening on {handle.scheme}://{args.host}:{handle.port} -> {args.target}", flush=True)
    try:
        await stop.wait()
    finally:
        log.info("gateway stopping")
        await handle.stop()


def main(argv: list[str] | None = None) -> int:
    with activate(snapshot()):  # `python -m gateway`: the environment read once, as neuro-san's main does
        parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
        add_arguments(parser)
        return run(parser.parse_args(argv))
