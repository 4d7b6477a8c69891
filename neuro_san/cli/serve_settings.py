"""``neuro-san serve``'s settings from its flags and the environment.

Apart from serve.py because ``serve --workers`` (workers.py) reads them too, in the parent,
before any worker starts; serve.py imports workers.py, so neither may import the other.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the server is imported when it runs, so client commands start fast
    from neuro_san.service.server import ServerConfig


def http_tls_files(args: argparse.Namespace, config: ServerConfig) -> tuple[Path | None, Path | None, Path | None]:
    """(cert, key, client CA) for HTTPS: each ``--http-tls-*`` file, else its gRPC twin."""
    if args.http_plaintext:
        return None, None, None

    def pick(http_value: str | None, grpc_value: Path | None) -> Path | None:
        return Path(http_value) if http_value else grpc_value

    return (
        pick(args.http_tls_cert, config.tls_cert),
        pick(args.http_tls_key, config.tls_key),
        pick(args.http_tls_client_ca, config.tls_client_ca),
    )


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    from neuro_san.service.server import ServerConfig

    config = ServerConfig.from_env()
    if args.host:
        config.host = args.host
    if args.port is not None:
        config.port = args.port
    if args.manifest:
        config.manifest_paths = [Path(m) for m in args.manifest]
    if args.tool_path:
        config.tool_paths = [Path(p) for p in args.tool_path]
    if args.server_name:
        config.server_name = args.server_name
    if getattr(args, "tracing", None):
        config.tracing = True
    for name in ("tls_cert", "tls_key", "tls_client_ca"):
        if getattr(args, name):
            setattr(config, name, Path(getattr(args, name)))
    return config


def openai_served(args: argparse.Namespace) -> bool:
    """The OpenAI-compatible API is served with HTTP, unless ``AGENT_OPENAI_ENABLE=false``."""
    if args.no_http:
        return False
    from gateway.openai.switch import openai_enabled  # the HTTP side only when HTTP is served

    return openai_enabled()


def a2a_served(args: argparse.Namespace) -> bool:
    """A2A is served with HTTP only (its gRPC binding shares the HTTP port's front-end), and
    unless ``AGENT_A2A_ENABLE=false``; ValueError for a value that is neither."""
    if args.no_http:
        return False
    from gateway.a2a.switch import a2a_enabled  # the HTTP side only when HTTP is served

    return a2a_enabled()
