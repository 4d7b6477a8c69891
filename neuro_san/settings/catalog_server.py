"""The server's own settings (``neuro-san serve``): networks, gRPC, limits, logs, security."""

from __future__ import annotations

from typing import Any

from neuro_san.settings.registry import Kind, Setting, declare

BOTH = ("serve", "gateway")
ALL = ("serve", "gateway", "client")


def _port(name: str, value: Any) -> None:
    if int(value) > 65535:
        raise ValueError(f"{name}={value} is not a port (0 to 65535)")


def _workers(name: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text != "auto" and not (text.isdigit() and int(text) >= 1):
        raise ValueError(f"{name}={value!r} is not a whole number >= 1 or 'auto'")


def _at_least_one(name: str, value: Any) -> None:
    if value < 1:
        raise ValueError(f"{name}={value} must be at least 1")


def _grpc(name: str, default: Any, doc: str, kind: Kind = Kind.FLOAT) -> Setting:
    return Setting(name, kind, default, doc)


declare(
    Setting("AGENT_MANIFEST_FILE", Kind.TEXT, None, "manifest(s) of the networks served, ':'-separated",
            flag="serve --manifest", shown_default="the bundled examples", applies=("serve",)),
    Setting("AGENT_TOOL_PATH", Kind.TEXT, None, "root(s) of coded tools, ':'-separated",
            flag="serve --tool-path, validate --tool-path"),
    Setting("AGENT_PORT", Kind.INT, 30011, "gRPC port (0 picks a free one)", flag="serve --port",
            applies=BOTH, check=_port),
    Setting("AGENT_SERVER_NAME", Kind.TEXT, "neuro-san.Agent", "health service name", flag="serve --server-name",
            applies=BOTH),
    Setting("AGENT_FORWARDED_REQUEST_METADATA", Kind.TEXT, "request_id user_id",
            "headers/metadata passed to logs and external agents", applies=BOTH),
    Setting("AGENT_HOCON_CACHE_DIR", Kind.TEXT, None, "where parsed HOCON files are kept; 'off' turns it off",
            shown_default="$XDG_CACHE_HOME or ~/.cache, then neuro-san-grpc/hocon"),
    Setting("AGENT_MANIFEST_UPDATE_PERIOD_SECONDS", Kind.FLOAT, 0.0,
            "pick up network file changes without a restart (0: off)"),
    Setting("AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS", Kind.FLOAT, 0.0,
            "empty AGENT_PROGRESS after this many quiet seconds (0: off)"),
    Setting("AGENT_MAX_CONCURRENT_REQUESTS", Kind.INT, 0, "concurrent chats per process before new ones are refused"),
    _grpc("AGENT_GRPC_KEEPALIVE_SECONDS", 60.0, "the server pings a quiet gRPC connection after this"),
    _grpc("AGENT_GRPC_KEEPALIVE_TIMEOUT_SECONDS", 20.0, "and drops it when the ping is unanswered this long"),
    _grpc("AGENT_GRPC_MIN_CLIENT_PING_SECONDS", 10.0, "clients pinging more often get GOAWAY too_many_pings"),
    _grpc("AGENT_GRPC_MAX_CONNECTION_IDLE_SECONDS", 300.0, "a gRPC connection with no call is closed after this"),
    _grpc("AGENT_GRPC_MAX_CONNECTION_AGE_SECONDS", 0.0, "recycle gRPC connections after this age (0: never)"),
    _grpc("AGENT_GRPC_MAX_CONNECTION_AGE_GRACE_SECONDS", 300.0, "calls in flight on a recycled connection get this"),
    _grpc("AGENT_GRPC_MAX_CONCURRENT_STREAMS", 0, "calls at once per gRPC connection (0: no cap)", Kind.INT),
    _grpc("AGENT_GRPC_REQUEST_TIMEOUT_SECONDS", 30.0,
          "a call whose request message has not arrived this long after its headers ends (0: never)"),
    Setting("AGENT_RATE_LIMIT_CHATS", Kind.INT, 0, "chats per period per caller (0: off)"),
    Setting("AGENT_RATE_LIMIT_PERIOD_SECONDS", Kind.FLOAT, 60.0, "the rate limit's period"),
    Setting("AGENT_RATE_LIMIT_BURST", Kind.INT, None, "the rate limit's bucket size", shown_default="the chats"),
    Setting("AGENT_RATE_LIMIT_CONCURRENT_CHATS", Kind.INT, 0, "chats in progress at once per caller (0: off)"),
    Setting("AGENT_TOKEN_BUDGET_PER_HOUR", Kind.INT, 0, "LLM tokens per caller per UTC hour (0: off)"),
    Setting("AGENT_TOKEN_BUDGET_PER_DAY", Kind.INT, 0, "LLM tokens per caller per UTC day (0: off)"),
    Setting("AGENT_LIMITS_REDIS_URL", Kind.TEXT, None, "Redis that shares rate limits and token budgets",
            shown_default="AGENT_REDIS_URL", secret=True),
    Setting("AGENT_MAX_TOKENS_PER_REQUEST", Kind.INT, 0, "LLM tokens one request may spend (0: off)"),
    Setting("AGENT_LLM_OVERRIDE", Kind.JSON, None, "JSON llm_config laid over every agent's"),
    Setting("AGENT_LLM_MAX_CONNECTIONS", Kind.INT, 4096, "open connections per LLM endpoint", check=_at_least_one),
    Setting("AGENT_LLM_INFO_FILE", Kind.TEXT, None, "your own model names and classes, merged over the built-in table"),
    Setting("AGENT_TOOLBOX_INFO_FILE", Kind.TEXT, None, "toolbox info file merged over the default toolbox"),
    Setting("AGENT_SERVICE_LOG_LEVEL", Kind.CHOICE, "info", "log level", flag="serve --log-level",
            choices=("debug", "info", "warning", "error", "critical")),
    Setting("AGENT_SERVICE_LOG_JSON", Kind.SWITCH, None, "true: JSON lines, false: plain text",
            shown_default="JSON unless on a terminal"),
    Setting("AGENT_API_KEYS", Kind.TEXT, None, "API keys, comma-separated (unset: no authentication)",
            secret=True, applies=BOTH),
    Setting("AGENT_API_KEYS_FILE", Kind.TEXT, None, "API keys with the networks each may call", applies=BOTH),
    Setting("AGENT_OAUTH_ISSUER", Kind.TEXT, None, "the OAuth 2.1 authorization server whose JWTs are accepted",
            applies=BOTH),
    Setting("AGENT_OAUTH_AUDIENCE", Kind.TEXT, None, "this server's public URL, the resource its tokens are for",
            applies=BOTH),
    Setting("AGENT_CHAT_CONTEXT_KEY", Kind.TEXT, None, "signs the chat_context returned; the same on every replica",
            secret=True),
    Setting("AGENT_TLS_CERT_FILE", Kind.TEXT, None, "TLS certificate chain on gRPC", flag="serve --tls-cert"),
    Setting("AGENT_TLS_KEY_FILE", Kind.TEXT, None, "TLS private key on gRPC", flag="serve --tls-key"),
    Setting("AGENT_TLS_CLIENT_CA_FILE", Kind.TEXT, None, "require gRPC client certificates signed by this CA",
            flag="serve --tls-client-ca"),
    Setting("AGENT_METRICS_PORT", Kind.INT, 0, "also serve Prometheus /metrics on this port (0: off)",
            flag="serve --metrics-port", check=_port),
    Setting("AGENT_TRACING", Kind.SWITCH, False, "otel (or a switch) turns on OpenTelemetry spans",
            flag="serve --tracing", choices=("otel", "opentelemetry")),
    Setting("AGENT_TRACING_EXPORT", Kind.TEXT, None, "the span exporter: otlp, console, jsonl:FILE or none",
            shown_default="OTEL_TRACES_EXPORTER, else otlp"),
    Setting("AGENT_WORKERS", Kind.TEXT, "1", "server processes sharing the ports ('auto': one per core)",
            flag="serve --workers", check=_workers),
    Setting("AGENT_EVENT_LOOP", Kind.CHOICE, "auto", "the event loop: uvloop when installed (auto), or insist",
            choices=("auto", "uvloop", "asyncio")),
    Setting("AGENT_INTERNAL_TOKEN", Kind.TEXT, None, "a secret shared by a server and its standalone gateways",
            secret=True, applies=BOTH,),
    Setting("AGENT_GATEWAY_INVOKER", Kind.CHOICE, "inprocess", "how serve's gateway reaches the service",
            choices=("inprocess", "grpc")),
    Setting("AGENT_WORKER_READY_FD", Kind.INT, None, "a worker's pipe to its parent (set by serve --workers)",
            internal=True),
    Setting("AGENT_WORKER_PARENT_PID", Kind.INT, None, "a worker's parent (set by serve --workers)", internal=True),
)
