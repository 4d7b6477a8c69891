"""The gateway's settings, with the defaults the server CLI relies on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gateway.host.allowed_hosts import AllowedHosts
from gateway.host.connection_guard import ConnectionLimits
from neuro_san.settings import process_env

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass
class GatewayConfig:
    """How the gateway behaves; every field has a default.

    - ``max_body_bytes``: largest request body (413 above it) and the gRPC message size
      limit of the gateway's channel, both ways.
    - ``forwarded_headers``: request headers passed on as gRPC metadata under their own
      (lower-cased) name, as neuro-san's ``AGENT_FORWARDED_REQUEST_METADATA``.
    - ``max_timeout_seconds``: cap on ``Grpc-Timeout``, and the deadline when none is sent.
    - ``cors_origins``: origins allowed by CORS (``"*"`` for any); empty: no CORS headers.
    - ``keepalive_seconds``: after this many quiet seconds an SSE stream gets a
      ``: keep-alive`` comment (so proxies keep it open); 0 turns it off. NDJSON streams
      get none: a blank line would break line-by-line JSON readers. The gRPC channel is
      not pinged on this period (servers answer frequent pings with GOAWAY).
    - ``shutdown_grace_seconds``: how long ``stop()`` lets streams in flight finish.
    - ``metrics``: serve ``GET /metrics`` (Prometheus text of the process's default
      registry) and count HTTP requests by route, status and latency.
    - ``tls_cert``/``tls_key``: PEM files; with both, the gateway serves HTTPS only.
      ``tls_client_ca``: also require a client certificate signed by this CA (mTLS).
    - ``target_tls``: talk TLS to a ``str`` target, trusting the system roots or
      ``target_ca``; ``target_cert``/``target_key`` are the gateway's client certificate
      when the server asks for one (mTLS). Setting any ``target_*`` file implies TLS.
      ``target_server_name`` overrides the name checked against the server's
      certificate (useful when the target is an address list).
    - ``connection_limits``: deadlines and caps for slow and flooding clients (see
      :mod:`gateway.host.connection_guard`; ``AGENT_HTTP_*`` environment variables by default).
    - ``send_internal_token``: the channel to a ``str`` target adds this process's internal
      token to every call (:mod:`neuro_san.core.internal_metadata`): ``serve``'s gateway
      calling its own server, or a standalone gateway given ``AGENT_INTERNAL_TOKEN``.
    - ``allowed_hosts``: the ``Host`` names every route answers (:mod:`gateway.host.allowed_hosts`;
      ``AGENT_HTTP_ALLOWED_HOSTS`` by default, a bad entry refused here, at start).
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    forwarded_headers: tuple[str, ...] = ("request_id", "user_id")
    max_timeout_seconds: float | None = None
    cors_origins: tuple[str, ...] = ()
    keepalive_seconds: float = 0
    shutdown_grace_seconds: float = 5.0
    metrics: bool = True
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    target_tls: bool = False
    target_ca: Path | None = None
    target_cert: Path | None = None
    target_key: Path | None = None
    target_server_name: str | None = None
    connection_limits: ConnectionLimits = field(default_factory=lambda: ConnectionLimits.from_env(process_env()))
    send_internal_token: bool = False
    allowed_hosts: AllowedHosts = field(default_factory=lambda: AllowedHosts.from_env(process_env()))

    @property
    def serves_tls(self) -> bool:
        return self.tls_cert is not None or self.tls_key is not None

    @property
    def target_uses_tls(self) -> bool:
        return self.target_tls or any(
            path is not None for path in (self.target_ca, self.target_cert, self.target_key)
        )


def parse_header_list(text: str | None) -> tuple[str, ...]:
    """``"request_id user_id"`` or ``"request_id,user_id"`` → ``("request_id", "user_id")``."""
    if not text:
        return ()
    return tuple(name for name in re.split(r"[\s,]+", text) if name)
