"""The benchmark's one table, rendered from a report (see :mod:`bench.run`)."""

from __future__ import annotations

from typing import Any

Row = tuple[str, str, str, str, str]
#: S10's A2A bindings against the SDK's own server (bench/frontends.py): the result key, the
#: call, the REST row that is the target with the SDK floor.
_A2A_BINDINGS = (
    ("jsonrpc", "JSON-RPC SendMessage", "REST"),
    ("jsonrpc_stream", "JSON-RPC SendStreamingMessage", "REST tokens"),
    ("http_json", "HTTP+JSON message:send", "REST"),
    ("http_json_stream", "HTTP+JSON message:stream", "REST tokens"),
    ("grpc", "gRPC SendMessage", "REST"),
    ("grpc_stream", "gRPC SendStreamingMessage", "REST tokens"),
)


def _a2a_rows() -> tuple[Row, ...]:
    """Per binding: ours, the SDK's own server, and ours / (SDK + REST), the target."""
    rows: list[Row] = []
    for key, call, rest in _A2A_BINDINGS:
        rows += [
            ("S10", f"a2a_sdk.{key}.ours.cpu_ms_per_chat", f"S10 A2A {call}: ours, CPU per call", "ms", ""),
            ("S10", f"a2a_sdk.{key}.sdk.cpu_ms_per_chat", f"S10 A2A {call}: the SDK's own server", "ms", ""),
            ("S10", f"a2a_sdk.{key}.to_sdk_plus_rest", f"S10 A2A {call}: ours / (SDK + {rest})", "×", "≤ 1.0"),
        ]
    return tuple(rows)


# (scenario, key, label, unit, target): the rows, in order. Targets are for reading; the
# benchmark never asserts them.
ROWS: tuple[Row, ...] = (
    ("startup", "healthy_s", "start → healthy", "s", "≤ 1.5"),
    ("startup", "first_chat_ms", "first chat", "ms", "≤ 50"),
    ("startup", "idle_rss_mib", "RSS idle", "MiB", "≤ 80"),
    ("startup", "rss_after_s2_mib", "RSS after S2", "MiB", ""),
    ("S1", "p50_ms", "S1 echo, 1 client, HTTP: p50", "ms", "≤ 3"),
    ("S1", "p99_ms", "S1 p99", "ms", ""),
    ("S1", "cpu_ms_per_chat", "S1 server CPU per chat", "ms", ""),
    ("S2", "chats_per_s", "S2 echo, 16 clients, HTTP", "chats/s", "≥ 400"),
    ("S2", "p50_ms", "S2 p50", "ms", ""),
    ("S2", "p99_ms", "S2 p99", "ms", ""),
    ("S2", "cpu_ms_per_chat", "S2 server CPU per chat", "ms", ""),
    ("S2", "loadgen_cpu_ms_per_chat", "S2 load generator CPU per chat", "ms", ""),
    ("S3", "chats_per_s", "S3 math_guy (2 LLM calls + coded tool), 16 clients, HTTP", "chats/s", "≥ 200"),
    ("S3", "p50_ms", "S3 p50", "ms", ""),
    ("S3", "cpu_ms_per_chat", "S3 server CPU per chat", "ms", ""),
    ("S4", "chats_per_s", "S4 echo, 16 clients, gRPC", "chats/s", ""),
    ("S4", "ratio_to_s2", "S4 / S2", "×", "≥ 1.0"),
    ("S4", "p50_ms", "S4 p50", "ms", ""),
    ("S4", "cpu_ms_per_chat", "S4 server CPU per chat", "ms", ""),
    ("S2", "cpu_ms_per_chat", "S2 server CPU per chat (beside S4's)", "ms", ""),
    ("S4", "cpu_over_s2_ms", "S4 − S2 server CPU per chat", "ms", "≤ 0.15"),
    ("S4", "loadgen_cpu_ms_per_chat", "S4 load generator CPU per chat", "ms", ""),
    ("S5", "completed", "S5 burst, 1 s LLM: completed", "chats", "all"),
    ("S5", "p99_ms", "S5 p99", "ms", "≤ 1250"),
    ("S5", "peak_rss_mib", "S5 peak RSS", "MiB", "≤ 400"),
    ("S6", "http.chats_per_s", "S6 bare aiohttp echo floor", "chats/s", ""),
    ("S6", "grpc.chats_per_s", "S6 bare grpc.aio echo floor", "chats/s", ""),
    ("S6", "http.cpu_ms_per_chat", "S6 aiohttp floor: server CPU per chat", "ms", ""),
    ("S6", "grpc.cpu_ms_per_chat", "S6 grpc.aio floor: server CPU per chat", "ms", ""),
    ("S6", "http_llm.chats_per_s", "S6 aiohttp + one LLM call (S2's frameworks only)", "chats/s", ""),
    ("S6", "http_llm.cpu_ms_per_chat", "S6 aiohttp + one LLM call: server CPU per chat", "ms", ""),
    ("S6", "s2_cpu_over_http_llm_floor_ms", "S2 CPU per chat beyond that floor (our code)", "ms", ""),
    ("S6", "burst_http.p99_ms", "S6 S5's burst on a bare aiohttp server: p99", "ms", ""),
    ("S6", "burst_grpc.p99_ms", "S6 S5's burst on a bare grpc.aio server: p99", "ms", ""),
    ("S6", "burst_http_llm.p99_ms", "S6 S5's burst on aiohttp + one LLM call: p99", "ms", ""),
    ("S6", "s5_p99_to_http_llm_burst", "S5 p99 / that burst's p99", "×", ""),
    ("S6", "s5_p99_to_http_burst", "S5 p99 / the bare aiohttp burst's p99 (one loop: reported)", "×", ""),
    ("S6", "s2_fraction_of_http_floor", "S2 / HTTP floor", "×", ""),
    ("S6", "s4_fraction_of_grpc_floor", "S4 / gRPC floor", "×", ""),
    ("S6", "grpc_over_http_floor_ms", "gRPC floor − HTTP floor, server CPU per chat", "ms", ""),
    ("S6", "s4_over_s2_beyond_floors_ms", "(S4 − S2) − (gRPC − HTTP floor) CPU per chat", "ms", "≤ 0.15"),
    ("S7", "completed", "S7 burst, 5 s LLM: completed", "chats", "all"),
    ("S7", "p99_ms", "S7 p99", "ms", ""),
    ("S7", "peak_rss_mib", "S7 peak RSS", "MiB", "≤ 500"),
    ("S7", "floor.p99_ms", "S7's burst on a bare aiohttp server: p99", "ms", ""),
    ("S7", "p99_to_floor", "S7 p99 / floor p99 (one loop: reported)", "×", ""),
    ("S7", "workers_auto.p99_ms", "S7's burst on --workers auto: p99", "ms", ""),
    ("S7", "floor_auto.p99_ms", "S7's burst on the floor, as many processes: p99", "ms", ""),
    ("S7", "workers_auto_to_floor_auto", "S7 on --workers auto / that floor's p99", "×", "≤ 2"),
    ("S8", "workers_1.chats_per_s", "S8 S2 on --workers 1", "chats/s", ""),
    ("S8", "workers_1.cpu_ms_per_chat", "S8 --workers 1 server CPU per chat", "ms", ""),
    ("S8", "workers_auto.chats_per_s", "S8 S2 on --workers auto", "chats/s", ""),
    ("S8", "workers_auto.cpu_ms_per_chat", "S8 --workers auto server CPU per chat", "ms", ""),
    ("S8", "speedup", "S8 workers auto / workers 1", "×", ""),
    ("S8", "burst_workers_1.p99_ms", "S8 S5's burst on --workers 1: p99", "ms", ""),
    ("S8", "burst_workers_auto.p99_ms", "S8 S5's burst on --workers auto: p99", "ms", ""),
    ("S8", "burst_p99_ratio", "S8 burst p99, workers auto / workers 1", "×", ""),
    ("S8", "burst_workers_auto_to_http_burst", "S8 that burst / one-process bare aiohttp burst", "×", ""),
    ("S8", "burst_floor_auto.p99_ms", "S8 S5's burst on the floor, as many processes: p99", "ms", ""),
    ("S8", "burst_auto_to_floor_auto", "S8 S5 on --workers auto / that floor's p99", "×", "≤ 1.5"),
    ("S9", "http.ttft_p50_ms", "S9 stream_tokens, 16 clients, HTTP: first delta p50", "ms", ""),
    ("S9", "http.ttft_p90_ms", "S9 HTTP first delta p90", "ms", ""),
    ("S9", "http.cpu_us_per_token", "S9 HTTP server CPU per streamed token", "µs", ""),
    ("S9", "relay.cpu_us_per_token", "S9 the bare relay (SSE in, NDJSON out) per token", "µs", ""),
    ("S9", "http.cpu_to_relay", "S9 HTTP per token / the relay's", "×", "≤ 1.5"),
    ("S9", "grpc.cpu_to_relay", "S9 gRPC per token / the relay's", "×", "≤ 1.5"),
    ("S9", "http.deltas_per_chat", "S9 HTTP delta messages per chat (s9_words a chat)", "", ""),
    ("S9", "grpc.ttft_p50_ms", "S9 gRPC first delta p50", "ms", ""),
    ("S9", "grpc.cpu_us_per_token", "S9 gRPC server CPU per streamed token", "µs", ""),
    ("S9", "http.cpu_ms_per_chat", "S9 HTTP server CPU per streamed chat", "ms", ""),
    ("S9", "http_whole.cpu_ms_per_chat", "S9 the same chats whole: server CPU per chat", "ms", ""),
    ("S9", "burst.completed", "S9 S5's burst with stream_tokens: completed", "chats", "all"),
    ("S10", "rest.cpu_ms_per_chat", "S10 echo, 16 clients, REST: server CPU per call", "ms", ""),
    ("S10", "rest_tokens.cpu_ms_per_chat", "S10 REST with stream_tokens (a 5-word answer)", "ms", ""),
    ("S10", "rest_maximal.cpu_ms_per_chat", "S10 REST, MAXIMAL", "ms", ""),
    ("S10", "rest_tokens_maximal.cpu_ms_per_chat", "S10 REST with stream_tokens, MAXIMAL", "ms", ""),
    ("S10", "mcp.cpu_ms_per_chat", "S10 MCP tools/call: server CPU per call", "ms", ""),
    ("S10", "mcp.cpu_to_rest", "S10 MCP / REST, CPU per call", "×", "≤ 1.2"),
    ("S10", "a2a.cpu_ms_per_chat", "S10 A2A SendMessage: server CPU per call", "ms", ""),
    ("S10", "a2a.cpu_to_rest", "S10 A2A / REST, CPU per call", "×", ""),
    *_a2a_rows(),
    ("S10", "openai.cpu_ms_per_chat", "S10 OpenAI chat.completions: server CPU per call", "ms", ""),
    ("S10", "openai.cpu_to_rest", "S10 OpenAI / REST, CPU per call", "×", "≤ 1.3"),
    ("S10", "openai.cpu_to_rest_maximal", "S10 OpenAI / REST MAXIMAL (the filter it chats with)", "×", ""),
    ("S10", "agui.cpu_ms_per_chat", "S10 AG-UI run: server CPU per call", "ms", ""),
    ("S10", "agui.cpu_to_rest", "S10 AG-UI / REST with stream_tokens, CPU per call", "×", "≤ 1.3"),
    ("S10", "agui.cpu_to_rest_maximal", "S10 AG-UI / REST with stream_tokens MAXIMAL", "×", ""),
    ("limiter", "off_us_per_chat", "per-caller limiter, limits off (per chat)", "µs", ""),
    ("limiter", "on_us_per_chat", "per-caller limiter, rate + tokens on (per chat)", "µs", ""),
)

#: The label column: as wide as the longest label.
_WIDTH = max(len(label) for _, _, label, _, _ in ROWS)


def _lookup(scenario: dict[str, Any], dotted: str) -> Any:
    value: Any = scenario
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _format(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 10 else f"{value:,.0f}"
    return str(value)


def render_table(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        f"neuro-san-grpc benchmark {report['timestamp']}  cores={machine['cores']}  "
        f"python={machine['python']}  loop={machine['event_loop']}  runs={report['settings']['runs']}"
        + ("  (SMOKE: figures mean nothing)" if report.get("smoke") else ""),
        "",
        f"| {'scenario':<{_WIDTH}} | {'value':>9} | {'unit':<7} | {'target':<7} |",
        f"|{'-' * (_WIDTH + 2)}|{'-' * 11}:|{'-' * 9}|{'-' * 9}|",
    ]
    for scenario, key, label, unit, target in ROWS:
        value = _lookup(report["scenarios"].get(scenario, {}), key)
        if scenario in ("S5", "S7") and key == "completed" and value is not None:
            value = f"{value:.0f}/{report['scenarios'][scenario]['chats']}"
        if scenario == "S9" and key == "burst.completed" and value is not None:
            value = f"{value:.0f}/{report['scenarios'][scenario]['burst']['chats']}"
        lines.append(f"| {label:<{_WIDTH}} | {_format(value):>9} | {unit:<7} | {target:<7} |")
    return "\n".join(lines)
