"""The load generator, a process of its own: ``python -m bench.load '<json spec>'``.

It prepares (connections, a warm-up), prints ``READY``, waits for one line on stdin (so
the orchestrator can sample the server's CPU exactly around the measured window), runs,
and prints ``RESULT <json>``. One code path serves the real server and the bare floor
servers, so their figures compare.

Spec keys: ``transport`` (``http``: aiohttp client, NDJSON streaming_chat through the
gateway; ``grpc``: grpc.aio, StreamingChat with ``agent-name`` metadata; ``mcp``, ``a2a``
(and its other bindings, ``a2a_stream``, ``a2a_rest``, ``a2a_grpc``, ...), ``openai``,
``agui``: the protocol front-ends, :mod:`bench.frontend_clients`), ``target``
(``http://host:port`` or ``host:port``), ``agent``, ``text``, ``mode`` (``closed``:
``clients`` workers each chatting back to back for ``duration`` seconds or until
``count`` chats; ``burst``: ``count`` chats started at once), ``warmup`` (chats per
worker before READY), ``uvloop``, ``stream_tokens`` (ask for token deltas; the result
then has the time to the first delta, ``ttft_*_ms``, and the ``deltas`` received).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import grpc
from neuro_san.api.grpc import agent_pb2, chat_pb2

from bench.fake import run_loop
from bench.frontend_clients import TRANSPORTS, frontend_client

GRPC_METHOD = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat"
Chat = Callable[[], Awaitable[str]]  # "" when the chat succeeded, else what went wrong
#: With stream_tokens: seconds from each chat's start to its first delta, and the deltas seen.
FIRST_DELTA: list[float] = []
DELTAS = [0]


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(fraction * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]


async def http_client(spec: dict[str, Any], connections: int) -> tuple[Chat, Callable[[], Awaitable[None]]]:
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=connections)
    session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120))
    url = f"{spec['target']}/api/v1/{spec['agent']}/streaming_chat"
    tokens = bool(spec.get("stream_tokens"))
    body = json.dumps({
        "user_message": {"text": spec["text"]}, **({"stream_tokens": True} if tokens else {}),
        **({"chat_filter": {"chat_filter_type": "MAXIMAL"}} if spec.get("maximal") else {}),
    }).encode()  # fmt: skip
    headers = {"Content-Type": "application/json"}

    async def chat_tokens() -> str:
        started = time.perf_counter()
        first = True
        last = b""
        async with session.post(url, data=body, headers=headers) as response:
            async for line in response.content:
                if b'"TOKEN_DELTA"' in line:
                    DELTAS[0] += 1
                    if first:
                        FIRST_DELTA.append(time.perf_counter() - started)
                        first = False
                last = line
            if response.status == 200 and b'"AGENT_FRAMEWORK"' in last:
                return ""
            return f"HTTP {response.status}: {last[-160:].decode(errors='replace')}"

    if tokens:
        return chat_tokens, session.close

    async def chat() -> str:
        async with session.post(url, data=body, headers=headers) as response:
            payload = await response.read()
            if response.status == 200 and b'"response"' in payload and b'{"error"' not in payload:
                return ""
            return f"HTTP {response.status}: {payload[-160:].decode(errors='replace')}"

    return chat, session.close


async def grpc_client(spec: dict[str, Any], connections: int) -> tuple[Chat, Callable[[], Awaitable[None]]]:
    channel = grpc.aio.insecure_channel(
        spec["target"], options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)]
    )
    # Bytes in, bytes out: the client does no (de)serialisation work of its own.
    call = channel.unary_stream(GRPC_METHOD)
    tokens = bool(spec.get("stream_tokens"))
    message = agent_pb2.ChatRequest(user_message={"text": spec["text"]})
    if tokens:
        message.stream_tokens = True
    request = message.SerializeToString()
    metadata = (("agent-name", spec["agent"]),)
    delta = chat_pb2.ChatMessage.TOKEN_DELTA

    async def chat() -> str:
        started = time.perf_counter()
        received = 0
        first = True
        async for raw in call(request, metadata=metadata):
            received += 1
            # Parsed only when streaming tokens: otherwise bytes stay bytes, as before.
            if tokens and agent_pb2.ChatResponse.FromString(raw).response.type == delta:
                DELTAS[0] += 1
                if first:
                    FIRST_DELTA.append(time.perf_counter() - started)
                    first = False
        return "" if received else "no response message"

    async def close() -> None:
        await channel.close()

    return chat, close


async def timed(chat: Chat, latencies: list[float], failures: list[str]) -> None:
    started = time.perf_counter()
    try:
        problem = await chat()
    except grpc.aio.AioRpcError as error:  # counted, not raised: a benchmark reports failures
        problem = f"{error.code().name}: {error.details()}"
    except Exception as error:
        problem = f"{type(error).__name__}: {error}"
    if problem:
        failures.append(problem[:200])
    else:
        latencies.append(time.perf_counter() - started)


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    mode = spec.get("mode", "closed")
    clients = int(spec.get("clients", 1))
    count = int(spec.get("count", 0))
    connections = count if mode == "burst" else clients
    transport = spec["transport"]
    make = http_client if transport == "http" else frontend_client if transport in TRANSPORTS else grpc_client
    chat, close = await make(spec, connections)
    warm_latencies: list[float] = []
    warm_failures: list[str] = []
    for _ in range(int(spec.get("warmup", 2))):
        await asyncio.gather(*(timed(chat, warm_latencies, warm_failures) for _ in range(clients)))
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    FIRST_DELTA.clear()
    DELTAS[0] = 0

    latencies: list[float] = []
    failures: list[str] = []
    cpu_started = time.process_time()
    started = time.perf_counter()
    if mode == "burst":
        await asyncio.gather(*(timed(chat, latencies, failures) for _ in range(count)))
    else:
        deadline = started + float(spec.get("duration", 5.0))
        budget = [count or 1 << 62]

        async def worker() -> None:
            while time.perf_counter() < deadline and budget[0] > 0:
                budget[0] -= 1
                await timed(chat, latencies, failures)

        await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    cpu_used = time.process_time() - cpu_started
    await close()
    latencies.sort()
    FIRST_DELTA.sort()
    streamed = {
        "deltas": DELTAS[0],
        "ttft_p50_ms": percentile(FIRST_DELTA, 0.50) * 1000,
        "ttft_p90_ms": percentile(FIRST_DELTA, 0.90) * 1000,
    }
    return {
        **(streamed if spec.get("stream_tokens") else {}),
        "completed": len(latencies),
        "failed": len(failures),
        "failure_kinds": sorted(set(failures))[:3],
        "warmup_failed": len(warm_failures),
        "elapsed_s": elapsed,
        "chats_per_s": len(latencies) / elapsed if elapsed > 0 else 0.0,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p90_ms": percentile(latencies, 0.90) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "max_ms": (latencies[-1] if latencies else 0.0) * 1000,
        "loadgen_cpu_s": cpu_used,
    }


if __name__ == "__main__":
    parsed = json.loads(sys.argv[1])
    result = run_loop(main(parsed), bool(parsed.get("uvloop")))
    print("RESULT " + json.dumps(result), flush=True)
