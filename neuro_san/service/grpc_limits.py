"""gRPC connection limits: keepalive enforcement, connection idle and age, streams per connection.

gRPC core's defaults let a connection sit idle forever and never check that its peer is
still there for two hours. These are the server options that bound that, read from
``AGENT_GRPC_*`` environment variables (a value that is not a number is refused at start):

- ``keepalive_seconds`` / ``keepalive_timeout_seconds``: the server pings a connection
  after this many quiet seconds and drops it if no answer comes in the timeout (dead peers,
  half-open connections).
- ``min_client_ping_seconds``: clients pinging more often than this get strikes and, after
  two, a GOAWAY (``too_many_pings``): keepalive enforcement against ping floods.
- ``max_connection_idle_seconds``: a connection with no call for this long is closed
  (GOAWAY; a client reconnects transparently on its next call). 0: never.
- ``max_connection_age_seconds`` (+ ``..._grace``): connections are recycled after this
  long, letting calls in flight finish within the grace. 0 (default): never, because a
  chat can last longer than any grace that would not cut it.
- ``request_message_seconds``: a unary-request call whose request message has not arrived
  this long after its headers ends with ``DEADLINE_EXCEEDED`` (a server interceptor,
  :mod:`neuro_san.service.request_deadline`: gRPC core has no option for it). 0: never.
- ``max_concurrent_streams``: calls at once on one connection (more wait on the client).
  0 (default): gRPC's own (no cap), because the standalone gateway carries all its HTTP
  clients' chats on one connection; per-caller limits belong to the rate limiter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from neuro_san.core.env_settings import env_numbers

_MS = 1000


@dataclass(frozen=True)
class GrpcConnectionLimits:
    keepalive_seconds: float = 60.0
    keepalive_timeout_seconds: float = 20.0
    min_client_ping_seconds: float = 10.0
    max_connection_idle_seconds: float = 300.0
    max_connection_age_seconds: float = 0.0
    max_connection_age_grace_seconds: float = 300.0
    max_concurrent_streams: int = 0
    request_message_seconds: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GrpcConnectionLimits:
        settings = [(name, field, int if field == "max_concurrent_streams" else float) for name, field in _ENV_SETTINGS]
        values = env_numbers(env, settings)
        return cls(**values)

    def server_options(self) -> list[tuple[str, int]]:
        options = [
            ("grpc.keepalive_time_ms", int(self.keepalive_seconds * _MS)),
            ("grpc.keepalive_timeout_ms", int(self.keepalive_timeout_seconds * _MS)),
            ("grpc.http2.min_ping_interval_without_data_ms", int(self.min_client_ping_seconds * _MS)),
            ("grpc.http2.max_ping_strikes", 2),
        ]
        if self.max_connection_idle_seconds:
            options.append(("grpc.max_connection_idle_ms", int(self.max_connection_idle_seconds * _MS)))
        if self.max_connection_age_seconds:
            options.append(("grpc.max_connection_age_ms", int(self.max_connection_age_seconds * _MS)))
            options.append(("grpc.max_connection_age_grace_ms", int(self.max_connection_age_grace_seconds * _MS)))
        if self.max_concurrent_streams:
            options.append(("grpc.max_concurrent_streams", self.max_concurrent_streams))
        return options


_ENV_SETTINGS = (
    ("AGENT_GRPC_KEEPALIVE_SECONDS", "keepalive_seconds"),
    ("AGENT_GRPC_KEEPALIVE_TIMEOUT_SECONDS", "keepalive_timeout_seconds"),
    ("AGENT_GRPC_MIN_CLIENT_PING_SECONDS", "min_client_ping_seconds"),
    ("AGENT_GRPC_MAX_CONNECTION_IDLE_SECONDS", "max_connection_idle_seconds"),
    ("AGENT_GRPC_MAX_CONNECTION_AGE_SECONDS", "max_connection_age_seconds"),
    ("AGENT_GRPC_MAX_CONNECTION_AGE_GRACE_SECONDS", "max_connection_age_grace_seconds"),
    ("AGENT_GRPC_MAX_CONCURRENT_STREAMS", "max_concurrent_streams"),
    ("AGENT_GRPC_REQUEST_TIMEOUT_SECONDS", "request_message_seconds"),
)
