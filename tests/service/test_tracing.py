"""OpenTelemetry tracing: spans per request, agent, LLM call and tool; W3C trace context
in from gRPC metadata and HTTP headers, and on to external agents; no sly_data, message
text or secrets in spans; and no opentelemetry at all when tracing is off."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from neuro_san.client import MAXIMAL, AsyncAgentClient
from neuro_san.core.telemetry import NO_TELEMETRY, Telemetry
from neuro_san.service.agent_service import AgentRouter
from neuro_san.service.tracing import TracingTelemetry, span_record
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import SLY_MARKER, make_host
from tests.support.servers import BUNDLED_MANIFEST, ROOT, ServerProcess, start_server

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN_ID}-01"
USER_TEXT = "count fruit, user-text-marker"

COUNTER = '''
from neuro_san.interfaces.coded_tool import CodedTool

class Counter(CodedTool):
    async def async_invoke(self, args, sly_data):
        if args["word"] == "explode":
            raise ValueError("boom")
        return len(args["word"])
'''


def _team(llm_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "llm_config": llm_config,
        "tools": [
            {"name": "boss", "instructions": "You are the boss.", "tools": ["analyst"]},
            {
                "name": "analyst",
                "function": {
                    "description": "Analyses a topic.",
                    "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}},
                },
                "instructions": "Analyse the topic.",
                "tools": ["counter"],
            },
            {
                "name": "counter",
                "function": {
                    "description": "Counts letters.",
                    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
                },
                "class": "counter.Counter",
            },
        ],
    }


def _record(span: ReadableSpan) -> dict[str, Any]:
    return span_record(span)


def _by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def _one(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = _by_name(spans, name)
    assert len(found) == 1, f"expected one span {name!r}, got {[s['name'] for s in spans]}"
    return found[0]


def test_spans_nest_and_carry_no_secrets(tmp_path: Path) -> None:
    """In-process: a gRPC call with a traceparent → server span under the caller's span,
    agent / llm / tool spans nested under it, and no sly_data or message text anywhere."""
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "counter.py").write_text(COUNTER)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = TracingTelemetry(NO_TELEMETRY, provider)

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"team": _team(fake.llm_config())}, [tmp_path], telemetry=telemetry)
        fake.enqueue(
            Reply.calls(FakeToolCall("analyst", {"topic": "fruit"})),
            Reply.calls(FakeToolCall("counter", {"word": "apples"}), FakeToolCall("counter", {"word": "explode"})),
            Reply.answer("apples has 6", usage=(11, 3)),
            Reply.answer("The analyst says apples has 6."),
        )
        server = grpc.aio.server()
        server.add_generic_rpc_handlers([AgentRouter(host, telemetry=telemetry)])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with AsyncAgentClient.grpc(f"127.0.0.1:{port}", metadata={"traceparent": TRACEPARENT}) as client:
                sly = {"token": SLY_MARKER + "t1"}
                messages = [m async for m in client.streaming_chat("team", USER_TEXT, sly, filter=MAXIMAL)]
            assert messages[-1].text == "The analyst says apples has 6."
        finally:
            await server.stop(None)
            await factory.aclose()

    run_with_fake_llm(body)
    spans = [_record(s) for s in exporter.get_finished_spans()]

    request = _one(spans, "chat team")
    assert request["kind"] == SpanKind.SERVER.name
    assert (request["trace_id"], request["parent_span_id"]) == (TRACE_ID, CALLER_SPAN_ID)
    assert request["attributes"]["neuro_san.agent"] == "team"
    assert {s["trace_id"] for s in spans} == {TRACE_ID}

    boss = _one(spans, "agent boss")
    assert boss["parent_span_id"] == request["span_id"]
    assert boss["attributes"]["neuro_san.origin"] == "boss"
    to_analyst = _one(spans, "tool analyst")
    assert to_analyst["parent_span_id"] == boss["span_id"]
    assert to_analyst["attributes"]["neuro_san.tool.kind"] == "llm_agent"
    analyst = _one(spans, "agent analyst")
    assert analyst["parent_span_id"] == to_analyst["span_id"]
    counters = _by_name(spans, "tool counter")
    assert [c["parent_span_id"] for c in counters] == [analyst["span_id"]] * 2
    assert sorted(c["attributes"]["neuro_san.tool.error"] for c in counters) == [False, True]
    assert {c["attributes"]["neuro_san.tool.kind"] for c in counters} == {"coded_tool"}

    llm_calls = _by_name(spans, "llm openai fake-model")
    assert len(llm_calls) == 4
    assert sorted(s["parent_span_id"] for s in llm_calls) == sorted([boss["span_id"]] * 2 + [analyst["span_id"]] * 2)
    assert {(s["attributes"]["gen_ai.usage.input_tokens"], s["attributes"]["gen_ai.usage.output_tokens"])
            for s in llm_calls} >= {(11, 3)}

    dumped = json.dumps(spans)
    for secret in (SLY_MARKER, "user-text-marker", "boom", "test-openai-key", "apples has 6"):
        assert secret not in dumped, f"{secret!r} leaked into a span"


def test_failed_call_marks_the_server_span_with_the_error_type_only() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = TracingTelemetry(NO_TELEMETRY, provider)

    async def main() -> None:
        host, factory = make_host({}, telemetry=telemetry)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers([AgentRouter(host, telemetry=telemetry)])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with AsyncAgentClient.grpc(f"127.0.0.1:{port}") as client:
                with pytest.raises(Exception, match=SLY_MARKER):
                    await client.function(SLY_MARKER + "no-such-agent")
        finally:
            await server.stop(None)
            await factory.aclose()

    asyncio.run(asyncio.wait_for(main(), 20))
    (span,) = [_record(s) for s in exporter.get_finished_spans()]
    assert span["name"].startswith("function ")
    assert span["status"] == "ERROR"
    assert span["attributes"]["error.type"] == "AgentNotFound"
    assert span["parent_span_id"] == ""  # no traceparent: a new trace


def test_tracing_telemetry_forwards_every_metrics_hook() -> None:
    """A hook TracingTelemetry does not override would silently stop reaching Prometheus."""
    hooks = {name for name, value in vars(Telemetry).items() if callable(value) and not name.startswith("_")}
    tracing_own = {"span", "extract", "inject"}
    assert hooks - tracing_own <= set(vars(TracingTelemetry)), hooks - set(vars(TracingTelemetry))


def test_default_telemetry_spans_cost_nothing() -> None:
    first = NO_TELEMETRY.span("x", {"a": 1})
    with first as span:
        span.set_attribute("b", 2)
        span.update_name("y")
    assert NO_TELEMETRY.span("z") is first  # one shared object, nothing allocated per call
    assert NO_TELEMETRY.extract([("traceparent", TRACEPARENT)]) is None
    carrier: dict[str, str] = {}
    NO_TELEMETRY.inject(carrier)
    assert carrier == {}


_IMPORT_PROBE = """
import asyncio, sys
from pathlib import Path
from neuro_san.service.server import AgentServer, ServerConfig
from neuro_san.client import AsyncAgentClient

async def main():
    server = AgentServer(ServerConfig.from_env())
    server.config.port = 0
    port = await server.start()
    async with AsyncAgentClient.grpc(f"127.0.0.1:{port}", metadata={"traceparent": sys.argv[1]}) as client:
        answer = await client.chat("math_guy", "6 * 7")
    await server.stop(0)
    return answer.text

text = asyncio.run(main())
print(text, "|", sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


@pytest.mark.parametrize("tracing", ["", "otel"])
def test_opentelemetry_is_imported_only_when_tracing_is_on(tracing: str) -> None:
    """A server built and called with tracing off (the default) never loads opentelemetry."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "AGENT_MANIFEST_FILE": str(BUNDLED_MANIFEST),
        "AGENT_TRACING": tracing,
        "AGENT_TRACING_EXPORT": "none",
    }
    command = [sys.executable, "-c", _IMPORT_PROBE, TRACEPARENT]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    answer, _, loaded = result.stdout.strip().partition(" | ")
    assert "42" in answer
    if tracing:
        assert "opentelemetry.sdk.trace" in loaded
    else:
        assert loaded == "[]"


# ---- servers in subprocesses: spans written as JSON lines (AGENT_TRACING_EXPORT=jsonl:…)


def _traced(path: Path, service: str) -> dict[str, str]:
    return {"AGENT_TRACING": "otel", "AGENT_TRACING_EXPORT": f"jsonl:{path}", "OTEL_SERVICE_NAME": service}


def _spans(path: Path, trace_id: str, want: str, within: float = 10.0) -> list[dict[str, Any]]:
    """The spans of trace ``trace_id`` written so far, once one named ``want`` is there
    (the server span ends just after the client has its last message)."""
    deadline = time.monotonic() + within
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        spans = [span for span in map(json.loads, lines) if span["trace_id"] == trace_id]
        if any(s["name"] == want for s in spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.05)


@pytest.fixture(scope="module")
def back_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    spans = tmp_path_factory.mktemp("back") / "spans.jsonl"
    with start_server(http=True, env=_traced(spans, "back")) as server:
        yield server, spans


def test_http_traceparent_header_becomes_the_server_span_parent(back_server: tuple[ServerProcess, Path]) -> None:
    server, path = back_server

    async def main() -> list[str]:
        url = f"{server.http_base}/api/v1/math_guy/streaming_chat"
        body = {"user_message": {"type": "HUMAN", "text": "6 * 7"}, "sly_data": {"key": SLY_MARKER + "http"}}
        headers = {"traceparent": f"00-{TRACE_ID[::-1]}-{CALLER_SPAN_ID}-01", "tracestate": "vendor=1"}
        async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as response:
            assert response.status == 200
            return [line async for line in response.content]

    lines = asyncio.run(asyncio.wait_for(main(), 30))
    assert "42" in b"".join(lines).decode()
    spans = _spans(path, TRACE_ID[::-1], "chat math_guy")
    request = _one(spans, "chat math_guy")
    assert request["parent_span_id"] == CALLER_SPAN_ID
    assert request["service"] == "back"
    assert {s["name"] for s in spans} >= {"chat math_guy", "agent math_guy"}
    assert SLY_MARKER not in json.dumps(spans)


def _relay(ref: str) -> dict[str, Any]:
    return {
        "llm_config": {"class": "scripted"},
        "tools": [
            {
                "name": "relay",
                "function": {"description": "Relays arithmetic to a remote math_guy."},
                "instructions": "Ask the remote agent.",
                "tools": [ref],
                "llm_config": {"class": "scripted", "reply": "remote says: {results}"},
                "allow": {"to_downstream": {"sly_data": ["user"]}},
            }
        ],
    }


@pytest.mark.parametrize("scheme", ["grpc", "http"])
def test_trace_context_reaches_an_external_agent_on_another_server(
    back_server: tuple[ServerProcess, Path], tmp_path: Path, scheme: str
) -> None:
    back, back_spans = back_server
    ref = f"grpc://{back.grpc_target}/math_guy" if scheme == "grpc" else f"{back.http_base}/math_guy"
    (tmp_path / "relay.json").write_text(json.dumps(_relay(ref)))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"relay.json": True}))
    front_spans = tmp_path / "front.jsonl"
    trace_id = {"grpc": "1", "http": "2"}[scheme] * 32

    with start_server(manifest=manifest, env=_traced(front_spans, "front")) as front:

        async def main() -> str:
            metadata = {"traceparent": f"00-{trace_id}-{CALLER_SPAN_ID}-01"}
            async with AsyncAgentClient.grpc(front.grpc_target, metadata=metadata) as client:
                answer = await client.chat("relay", "6 * 7", sly_data={"user": SLY_MARKER + "user"})
            return answer.text

        assert asyncio.run(asyncio.wait_for(main(), 30)) == "remote says: The answer is 42."
        front_side = _spans(front_spans, trace_id, "chat relay")

    request = _one(front_side, "chat relay")
    assert (request["trace_id"], request["parent_span_id"]) == (trace_id, CALLER_SPAN_ID)
    call = _one(front_side, f"tool {ref}")
    assert call["kind"] == "CLIENT" and call["attributes"]["neuro_san.tool.kind"] == "external_agent"

    remote = _spans(back_spans, trace_id, "chat math_guy")
    remote_request = _one(remote, "chat math_guy")
    assert remote_request["parent_span_id"] == call["span_id"]
    assert SLY_MARKER not in json.dumps(front_side + remote)
