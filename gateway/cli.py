"""``neuro-san gateway``: the HTTP/JSON gateway alone, in front of gRPC replicas.

``add_arguments`` adds the options to any parser; ``run`` serves until SIGTERM or
SIGINT. Also runnable as ``python -m gateway --target HOST:PORT[,HOST:PORT...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal

from gateway.config import DEFAULT_MAX_BODY_BYTES, GatewayConfig, parse_header_list
from gateway.server import start_gateway

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gateway's command-line options (environment variables give the defaults)."""
    parser.add_argument(
        "--target",
        default=os.environ.get("AGENT_GRPC_TARGET", f"127.0.0.1:{os.environ.get('AGENT_PORT', '30011')}"),
        help="gRPC server as host:port, or several comma-separated for round-robin",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("AGENT_HTTP_PORT", "8080")),
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


def config_from_args(args: argparse.Namespace) -> GatewayConfig:
    forwarded = os.environ.get("AGENT_FORWARDED_REQUEST_METADATA")
    config = GatewayConfig(
        max_body_bytes=args.max_body_bytes,
        cors_origins=tuple(args.cors_origin or ()),
        max_timeout_seconds=getattr(args, "max_timeout_seconds", None),
    )
    if forwarded is not None:
        config.forwarded_headers = parse_header_list(forwarded)
    return config


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; 0 on a clean stop."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        pass
    return 0


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    handle = await start_gateway(args.target, args.host, args.port, config_from_args(args))
    # Tests and supervisors read the bound port from this line.
    print(f"gateway listening on http://{args.host}:{handle.port} -> {args.target}", flush=True)
    try:
        await stop.wait()
    finally:
        log.info("gateway stopping")
        await handle.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
