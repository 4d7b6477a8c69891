"""TLS on both sides of the gateway: HTTPS (optionally mTLS) towards HTTP clients, and
TLS (optionally with a client certificate) towards a remote gRPC target.

Both are built once, at start-up, from PEM files named in :class:`GatewayConfig`;
a half-given pair (a certificate without its key) is a start-up error, never a silent
fallback to plaintext.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import grpc

from gateway.host.config import GatewayConfig


class TlsConfigError(ValueError):
    """The TLS files given cannot make a working configuration."""


def server_ssl_context(config: GatewayConfig) -> ssl.SSLContext | None:
    """The HTTPS context for the gateway's listener, or ``None`` for plain HTTP.

    Reads files: call it off the event loop (``asyncio.to_thread``).
    """
    if not config.serves_tls:
        if config.tls_client_ca is not None:
            raise TlsConfigError("a client CA (mTLS) needs a server certificate and key too")
        return None
    if config.tls_cert is None or config.tls_key is None:
        raise TlsConfigError("HTTPS needs both a certificate and a key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(config.tls_cert), str(config.tls_key))
    if config.tls_client_ca is not None:
        context.load_verify_locations(cafile=str(config.tls_client_ca))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def channel_credentials(config: GatewayConfig) -> grpc.ChannelCredentials | None:
    """Credentials for a TLS channel to the gRPC target, or ``None`` for plaintext.

    Reads files: call it off the event loop (``asyncio.to_thread``).
    """
    if not config.target_uses_tls:
        return None
    if (config.target_cert is None) != (config.target_key is None):
        raise TlsConfigError("a client certificate for the target needs both --target-cert and --target-key")
    return grpc.ssl_channel_credentials(
        root_certificates=_read(config.target_ca),  # None: the system roots
        private_key=_read(config.target_key),
        certificate_chain=_read(config.target_cert),
    )


def _read(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None else None
