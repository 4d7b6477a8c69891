"""The agent server: gRPC (AgentService, ConciergeService, health, reflection) and,
optionally, the HTTP gateway in the same process.

``ServerConfig.from_env()`` reads neuro-san's environment variables; the CLI's flags
override them. ``AgentServer`` owns everything shared by calls: the network registry,
the model factory (HTTP sessions), the coded-tool resolver and the network runner.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc, directory_pb2_grpc
from neuro_san.core.access import AccessPolicy
from neuro_san.core.errors import ConfigurationError
from neuro_san.core.oauth_settings import OAuthSettings
from neuro_san.core.rate_limits import CallerLimits, RateLimiter
from neuro_san.core.telemetry import Telemetry
from neuro_san.core.token_budgets import TokenLedger
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.http import HttpPool
from neuro_san.network.coded_refs import BUNDLED_TOOLS
from neuro_san.network.registry import NetworkRegistry, manifest_paths_from_env
from neuro_san.periodic.scheduler import run_periodic
from neuro_san.runtime.coded_tools import CodedToolResolver
from neuro_san.runtime.external import RemoteFactory
from neuro_san.runtime.network_runner import NetworkRunner
from neuro_san.runtime.signing import ContextSigner
from neuro_san.service.admission import Admission
from neuro_san.service.agent_service import SERVICE as AGENT_SERVICE
from neuro_san.service.agent_service import AgentRouter
from neuro_san.service.caller_limits import count_decision
from neuro_san.service.concierge_service import ConciergeServicer
from neuro_san.service.directory_service import DirectoryServicer
from neuro_san.service.grpc_limits import GrpcConnectionLimits
from neuro_san.service.handlers import HandlerSet
from neuro_san.service.limits_gate import LocalGate, RedisGate
from neuro_san.service.metrics import PRIVATE, PrometheusTelemetry
from neuro_san.service.oauth import JwtVerifier
from neuro_san.service.request_deadline import RequestMessageDeadline
from neuro_san.settings import Settings, process_env

log = logging.getLogger(__name__)

MiB = 1024 * 1024
#: See AgentServer.start: calls waiting for the event loop before the core sheds them.
PENDING_CALLS = 20_000
CONCIERGE_SERVICE = concierge_pb2.DESCRIPTOR.services_by_name["ConciergeService"].full_name


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _forwarded(value: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """``AGENT_FORWARDED_REQUEST_METADATA``. With OAuth on, ``authorization`` carries access
    tokens issued for this server alone: passing them on to tools or external agents is the
    token passthrough MCP forbids, so naming it is refused (with API keys only, an operator
    may forward it to coded tools, as neuro-san does)."""
    names = tuple(value.replace(",", " ").split())
    if env.get("AGENT_OAUTH_ISSUER", "").strip() and "authorization" in {name.lower() for name in names}:
        raise ConfigurationError(
            "AGENT_FORWARDED_REQUEST_METADATA names authorization while AGENT_OAUTH_ISSUER is set: OAuth "
            "access tokens are for this server only and are never forwarded to tools or external agents"
        )
    return names


def _access(env: Mapping[str, str]) -> AccessPolicy:
    """API keys, and OAuth access tokens when ``AGENT_OAUTH_ISSUER`` is set."""
    settings = OAuthSettings.from_env(env)
    return AccessPolicy.from_env(env).with_tokens(JwtVerifier(settings) if settings is not None else None)


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 30011
    server_name: str = "neuro-san.Agent"
    manifest_paths: list[Path] = field(default_factory=list)
    tool_paths: list[Path] = field(default_factory=list)
    max_message_bytes: int = 16 * MiB
    forwarded_metadata: tuple[str, ...] = ("request_id", "user_id")
    keepalive_seconds: float = 0.0
    manifest_update_seconds: float = 0.0
    max_concurrent_requests: int = 0
    #: Key that signs chat_context (AGENT_CHAT_CONTEXT_KEY); the same on every replica.
    chat_context_key: bytes | None = None
    access: AccessPolicy = field(default_factory=AccessPolicy)
    #: PEM files for TLS; with ``tls_client_ca``, clients must present a certificate it signed.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    #: OpenTelemetry spans (AGENT_TRACING=otel); needs the ``tracing`` extra installed.
    tracing: bool = False
    #: Share the port with sibling processes (SO_REUSEPORT): ``serve --workers``.
    reuse_port: bool = False
    #: Keepalive, connection idle/age and streams per connection (AGENT_GRPC_*).
    connection_limits: GrpcConnectionLimits = field(default_factory=GrpcConnectionLimits)
    #: Per-caller rate limits when the API keys file gives a key none (AGENT_RATE_LIMIT_*).
    rate_limits: CallerLimits = field(default_factory=CallerLimits)
    #: LLM tokens per request when a network sets no max_tokens_per_request (0: none).
    max_tokens_per_request: int = 0
    #: Share rate limits and token budgets between replicas (AGENT_LIMITS_REDIS_URL, else the
    #: shared front-end state's AGENT_REDIS_URL: one Redis for all shared state by default).
    limits_redis_url: str = ""

    def server_credentials(self) -> grpc.ServerCredentials | None:
        if self.tls_cert is None and self.tls_key is None:
            return None
        if self.tls_cert is None or self.tls_key is None:
            raise ValueError("TLS needs both a certificate and a key (--tls-cert and --tls-key)")
        client_ca = self.tls_client_ca.read_bytes() if self.tls_client_ca else None
        return grpc.ssl_server_credentials(
            [(self.tls_key.read_bytes(), self.tls_cert.read_bytes())],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServerConfig:
        """The server's settings (the process's, unless ``env`` is given), typed by the
        registry: a malformed value raises SettingError (a ValueError) naming it."""
        values = Settings(process_env() if env is None else env)
        tool_paths = [Path(p) for p in (values.value("AGENT_TOOL_PATH") or "").split(":") if p]
        limits_url = values.value("AGENT_LIMITS_REDIS_URL") or values.value("AGENT_REDIS_URL") or ""
        return cls(
            port=values.value("AGENT_PORT"),
            server_name=values.value("AGENT_SERVER_NAME"),
            manifest_paths=manifest_paths_from_env(values.get("AGENT_MANIFEST_FILE")),
            tool_paths=tool_paths,
            forwarded_metadata=_forwarded(values.value("AGENT_FORWARDED_REQUEST_METADATA"), values),
            keepalive_seconds=float(values.value("AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS")),
            manifest_update_seconds=float(values.value("AGENT_MANIFEST_UPDATE_PERIOD_SECONDS")),
            max_concurrent_requests=values.value("AGENT_MAX_CONCURRENT_REQUESTS"),
            chat_context_key=(values.value("AGENT_CHAT_CONTEXT_KEY") or "").encode() or None,
            access=_access(values),
            tls_cert=_path(values.value("AGENT_TLS_CERT_FILE")),
            tls_key=_path(values.value("AGENT_TLS_KEY_FILE")),
            tls_client_ca=_path(values.value("AGENT_TLS_CLIENT_CA_FILE")),
            tracing=_tracing(values),
            connection_limits=GrpcConnectionLimits.from_env(values),
            rate_limits=CallerLimits.from_env(values),
            max_tokens_per_request=values.value("AGENT_MAX_TOKENS_PER_REQUEST"),
            limits_redis_url=limits_url,
        )


class AgentServer:
    """A running gRPC server and everything it shares between calls.

    ``remote`` makes the agents of other servers (``grpc://…``, ``http(s)://…`` tools)
    and ``remote_close`` closes what it opened, at :meth:`stop`. The client library has
    them (:mod:`neuro_san.client.remote`); the composition root (``neuro-san serve``)
    passes them in, as the service layer imports no client. Without them such tools are
    refused as not enabled.
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        remote: RemoteFactory | None = None,
        remote_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.config = config
        roots = [*config.tool_paths, BUNDLED_TOOLS]
        # The registry checks at load that every coded tool's class is found on these roots.
        self.registry = NetworkRegistry.from_manifests(config.manifest_paths, tool_roots=roots)
        self.telemetry: Telemetry = PrometheusTelemetry(self._metrics_label)
        if config.tracing:
            self.telemetry = _with_tracing(self.telemetry)
        self.registry.on_change.append(lambda names: self.telemetry.networks_changed(len(names)))
        self.models = LlmFactory(pool=HttpPool(on_retry=self.telemetry.llm_retry))
        self._remote_close = remote_close
        self.runner = NetworkRunner(
            self.registry,
            self.models,
            CodedToolResolver(roots),
            remote=remote,
            keepalive_seconds=config.keepalive_seconds,
            signer=ContextSigner(config.chat_context_key) if config.chat_context_key else None,
            telemetry=self.telemetry,
            max_tokens_per_request=config.max_tokens_per_request,
        )
        self.admission = Admission(config.max_concurrent_requests)
        self.limiter = RateLimiter(config.rate_limits, on_decision=count_decision)
        self.tokens = TokenLedger(config.rate_limits)
        local = LocalGate(self.limiter, self.tokens)
        #: Shared across replicas through Redis when AGENT_LIMITS_REDIS_URL is set.
        self.gate: LocalGate | RedisGate = local
        if config.limits_redis_url:
            self.gate = RedisGate(config.limits_redis_url, local)
        self.health = health.aio.HealthServicer()
        #: The method handlers served, also called directly by the in-process gateway.
        self.handlers = HandlerSet()
        self.port = 0
        #: A private, always-plaintext listener (an abstract unix socket, so no file and no
        #: network exposure) for the in-process gateway, which then needs no certificates.
        self.internal_target = f"unix-abstract:neuro-san-{os.getpid()}-{id(self):x}"
        self._server: grpc.aio.Server | None = None
        #: More services served on the gRPC port, added by the composition root (add_generic_handlers).
        self._extra_handlers: list[grpc.GenericRpcHandler] = []
        self._watch: asyncio.Task[None] | None = None
        self._periodic: asyncio.Task[None] | None = None

    def add_generic_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        """Serve more services on the gRPC port, beside AgentService and ConciergeService.

        The hook of the composition root (``neuro-san serve``) for protocol bindings the
        service layer knows nothing of: A2A's gRPC binding (``gateway/a2a/grpc_binding.py``)
        reaches the agents through the gateway's invoker, as every front-end does. These
        handlers are served over the wire only (the in-process invoker does not call them)
        and are not listed by reflection. Call before :meth:`start`.
        """
        if self._server is not None:
            raise RuntimeError("add_generic_handlers must be called before start()")
        self._extra_handlers.extend(handlers)

    def _metrics_label(self, name: str) -> str | None:
        """A served network's metrics label: with access control on, a private one is not named
        (``/metrics`` is read without a credential)."""
        spec = self.registry.get(name)
        if spec is None:
            return None
        return PRIVATE if self.config.access.enabled and not spec.public else name

    def _interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        seconds = self.config.connection_limits.request_message_seconds
        return [RequestMessageDeadline(seconds)] if seconds > 0 else []

    async def start(self) -> int:
        limit = self.config.max_message_bytes
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
                ("grpc.so_reuseport", 1 if self.config.reuse_port else 0),
                # Calls the core has accepted but the Python loop has not picked up yet.
                # Past the default soft limit (1,000) the core starts cancelling new calls
                # at random, so a burst of 2,000 chats lost ~10% of them as CANCELLED;
                # admission (AGENT_MAX_CONCURRENT_REQUESTS) is where load is refused.
                ("grpc.server.max_pending_requests", PENDING_CALLS),
                ("grpc.server.max_pending_requests_hard_limit", 2 * PENDING_CALLS),
                *self.config.connection_limits.server_options(),
            ],
            interceptors=self._interceptors(),
        )
        access = self.config.access
        router = AgentRouter(
            self.runner, self.config.forwarded_metadata, self.admission, access, self.telemetry, self.gate
        )
        self.handlers.add_generic_rpc_handlers([router])
        concierge_pb2_grpc.add_ConciergeServiceServicer_to_server(
            ConciergeServicer(self.runner, access), self.handlers  # type: ignore[arg-type]
        )
        # The front-ends' directory (MCP, A2A): on the gRPC port, not on REST, and not listed by
        # reflection, so what a gRPC client discovers is neuro-san's API as it is.
        directory_pb2_grpc.add_DirectoryServiceServicer_to_server(
            DirectoryServicer(self.runner, access), self.handlers  # type: ignore[arg-type]
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.handlers)  # type: ignore[arg-type]
        self.handlers.install(server)
        if self._extra_handlers:
            server.add_generic_rpc_handlers(tuple(self._extra_handlers))
        reflection.enable_server_reflection(
            [AGENT_SERVICE, CONCIERGE_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME], server
        )
        address = f"{self.config.host}:{self.config.port}"
        credentials = self.config.server_credentials()
        if credentials is None:
            self.port = server.add_insecure_port(address)
        else:
            self.port = server.add_secure_port(address, credentials)
        server.add_insecure_port(self.internal_target)
        if self.port == 0:
            raise OSError(f"cannot listen on {self.config.host}:{self.config.port}")
        await server.start()
        self._server = server
        for name in ("", self.config.server_name):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        if self.config.manifest_update_seconds > 0:
            self._watch = asyncio.create_task(self.registry.watch(self.config.manifest_update_seconds))
        self._periodic = asyncio.create_task(run_periodic(self.registry.periodic, self.runner))
        if not access.enabled and self.config.host not in ("127.0.0.1", "localhost", "::1"):
            log.warning(
                "listening on %s without authentication: anyone who can reach this port can call every "
                "agent; set AGENT_API_KEYS, AGENT_API_KEYS_FILE or AGENT_OAUTH_ISSUER",
                self.config.host,
            )
        names = sorted(self.registry.networks())
        if names:
            log.info(
                "gRPC listening on %s:%d serving %d networks: %s",
                self.config.host, self.port, len(names), ", ".join(names),
            )
        else:
            # A server up with nothing to serve is almost always a manifest problem (a path,
            # an include, the working directory): say so where the operator looks.
            problems = len(self.registry.errors)
            log.error(
                "gRPC listening on %s:%d serving NO agent networks (%d load errors logged above; "
                "check AGENT_MANIFEST_FILE and the directory the server was started in)",
                self.config.host, self.port, problems,
            )
        return self.port

    async def stop(self, grace: float = 5.0, drain_local: Callable[[float], Awaitable[None]] | None = None) -> None:
        """Drain: health NOT_SERVING, refuse new calls, let calls in flight finish
        within ``grace`` seconds, then cancel what is left (which cancels its LLM calls).
        ``drain_local`` drains the gateway's calls (in process or over the private
        channel) first, within the same ``grace``."""
        self.admission.draining = True
        await self.health.enter_graceful_shutdown()
        if self._watch is not None:
            self._watch.cancel()
        if self._periodic is not None:
            self._periodic.cancel()
        # The gateway's calls first, the gRPC server after: a gRPC server that stops while
        # the gateway still streams over it closes the socket as the last call ends, racing
        # that call's final frames. New calls are refused meanwhile (admission is draining).
        loop = asyncio.get_running_loop()
        started = loop.time()
        if drain_local is not None:
            await drain_local(grace)
        if self._server is not None:
            await self._server.stop(max(0.0, grace - (loop.time() - started)))
        await self.models.aclose()
        await self.runner.aclose()
        if isinstance(self.gate, RedisGate):
            await self.gate.close()
        if self._remote_close is not None:
            await self._remote_close()

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()


def _tracing(settings: Settings) -> bool:
    """``AGENT_TRACING``: ``otel`` (or ``opentelemetry``), or a switch; anything else is refused."""
    return bool(settings.value("AGENT_TRACING"))


def _with_tracing(metrics: Telemetry) -> Telemetry:
    """OpenTelemetry spans on top of ``metrics``, when the ``tracing`` extra is installed.
    Imported only here, so a server without tracing never loads opentelemetry."""
    try:
        from neuro_san.service.tracing import tracing_telemetry
    except ImportError as error:
        log.warning("tracing is on but OpenTelemetry is missing (pip install 'neuro-san-grpc[tracing]'): %s", error)
        return metrics
    log.info("OpenTelemetry tracing on")
    return tracing_telemetry(metrics)
