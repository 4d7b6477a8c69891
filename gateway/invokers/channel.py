"""The standalone gateway's invoker: one gRPC channel and the callables built on it.

``target`` is a gRPC target (``host:port``, ``dns:///host:port``, ``unix:...``) or a
comma-separated list of ``host:port`` replicas. A list becomes one channel with the
``round_robin`` load-balancing policy over ``ipv4:``/``ipv6:`` addresses (host names are
resolved once, at start-up), so every call picks the next replica; nothing home-made.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Callable
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from gateway.invokers.interface import Invoker, RpcMethod
from neuro_san.core.internal_metadata import INTERNAL_TOKEN_KEY, internal_token

_ROUND_ROBIN_CONFIG = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})
HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check"


def channel_options(
    max_message_bytes: int,
    *,
    round_robin: bool,
    keepalive_seconds: float = 0,
    server_name: str | None = None,
) -> list[tuple[str, Any]]:
    options: list[tuple[str, Any]] = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]
    if server_name:  # the name checked against the server's certificate
        options.append(("grpc.ssl_target_name_override", server_name))
    if round_robin:
        options += [
            ("grpc.lb_policy_name", "round_robin"),
            ("grpc.service_config", _ROUND_ROBIN_CONFIG),
        ]
    if keepalive_seconds > 0:
        options += [
            ("grpc.keepalive_time_ms", int(keepalive_seconds * 1000)),
            ("grpc.keepalive_permit_without_calls", 0),
        ]
    return options


async def resolve_target(target: str) -> tuple[str, bool]:
    """(channel target, use round-robin) for one target or a comma-separated list."""
    target = target.strip()
    if target.startswith(("ipv4:", "ipv6:")):
        return target, "," in target  # already an address list: pass it through
    parts = [part.strip() for part in target.split(",") if part.strip()]
    if not parts:
        raise ValueError("no gRPC target given")
    if len(parts) == 1:
        return parts[0], False
    addresses = [await _resolve(part) for part in parts]
    if all(":" not in host for host, _ in addresses):
        return "ipv4:" + ",".join(f"{host}:{port}" for host, port in addresses), True
    if all(":" in host for host, _ in addresses):
        return "ipv6:" + ",".join(f"[{host}]:{port}" for host, port in addresses), True
    raise ValueError(f"cannot mix IPv4 and IPv6 replicas in one target: {target!r}")


async def _resolve(host_port: str) -> tuple[str, int]:
    host, sep, port_text = host_port.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"replica {host_port!r} is not host:port")
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
        return host, int(port_text)
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, int(port_text), type=socket.SOCK_STREAM
    )
    infos.sort(key=lambda info: 0 if info[0] == socket.AF_INET else 1)
    return str(infos[0][4][0]), int(port_text)


class _ProcessToken:
    """Adds this process's internal token to every call, so that ``serve``'s own server believes
    the internal keys its front-ends set when they call it over the gRPC hop
    (``AGENT_GATEWAY_INVOKER=grpc``), or a server sharing AGENT_INTERNAL_TOKEN believes a
    standalone gateway's. Only on those channels: the token never goes to another server."""

    @staticmethod
    def details(details: Any) -> Any:
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        metadata.add(INTERNAL_TOKEN_KEY, internal_token())
        return details._replace(metadata=metadata)


class _UnaryToken(grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(_ProcessToken.details(client_call_details), request)


class _StreamingToken(grpc.aio.UnaryStreamClientInterceptor):
    """Its own class: grpc.aio files an interceptor under the first kind it is (an
    ``elif`` chain), so one class of both kinds never saw a streaming call (StreamingChat
    went without the token)."""

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(_ProcessToken.details(client_call_details), request)


class GrpcInvoker(Invoker):
    """Holds the channel and one multicallable per route."""

    def __init__(self, channel: grpc.aio.Channel, owns_channel: bool) -> None:
        self.channel = channel
        self._owns_channel = owns_channel
        # The calls in flight, so a graceful stop can wait for their ends (see drain).
        self._active: set[Any] = set()
        self._health = channel.unary_unary(
            HEALTH_CHECK_PATH,
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )

    @classmethod
    async def connect(
        cls,
        target: str | grpc.aio.Channel,
        max_message_bytes: int,
        keepalive_seconds: float = 0,
        credentials: grpc.ChannelCredentials | None = None,
        server_name: str | None = None,
        send_internal_token: bool = False,
    ) -> GrpcInvoker:
        """A channel to ``target``: TLS with ``credentials``, else plaintext. With
        ``send_internal_token`` every call carries this process's internal token."""
        if not isinstance(target, str):
            return cls(target, owns_channel=False)
        resolved, round_robin = await resolve_target(target)
        options = channel_options(
            max_message_bytes,
            round_robin=round_robin,
            keepalive_seconds=keepalive_seconds,
            server_name=server_name,
        )
        interceptors: list[Any] = [_UnaryToken(), _StreamingToken()] if send_internal_token else []
        if credentials is not None:
            channel = grpc.aio.secure_channel(resolved, credentials, options=options, interceptors=interceptors)
        else:
            channel = grpc.aio.insecure_channel(resolved, options=options, interceptors=interceptors)
        return cls(channel, owns_channel=True)

    def callable_for(self, method: RpcMethod) -> Callable[..., Any]:
        """The multicallable of ``method``."""
        factory = self.channel.unary_stream if method.server_streaming else self.channel.unary_unary
        multicallable = factory(
            method.grpc_path,
            request_serializer=method.request_class.SerializeToString,
            response_deserializer=method.response_class.FromString,
        )
        active = self._active

        def tracked(*args: Any, **kwargs: Any) -> Any:
            call = multicallable(*args, **kwargs)
            active.add(call)
            # The callback may receive the inner call rather than this (intercepted) one.
            call.add_done_callback(lambda _done: active.discard(call))
            return call

        return tracked

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the calls in flight. ``neuro-san serve`` with
        AGENT_GATEWAY_INVOKER=grpc drains these before stopping its gRPC server: stopping
        the server first closes the socket the moment a call ends, racing the call's last
        frames (a chat that finished could reach its HTTP client as UNAVAILABLE)."""
        if not self._active:
            return
        waiters = [asyncio.ensure_future(call.code()) for call in list(self._active)]
        _done, pending = await asyncio.wait(waiters, timeout=grace)
        for waiter in pending:
            waiter.cancel()

    async def health(self, service: str, deadline: float) -> int:
        """The serving status of ``service`` (``""``: the whole server)."""
        request = health_pb2.HealthCheckRequest(service=service)
        response = await self._health(request, timeout=deadline)
        return int(response.status)

    async def close(self) -> None:
        if self._owns_channel:
            await self.channel.close()
