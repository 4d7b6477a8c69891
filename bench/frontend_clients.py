"""The load generator's clients of the protocol front-ends (S10), one chat each, as their
own clients call them. Each returns ``""`` when the call succeeded, else what went wrong.

- ``mcp``: ``tools/call`` at MCP 2026-07-28 (sessionless: one POST, no handshake), JSON.
- ``a2a``: A2A JSON-RPC ``SendMessage`` (``A2A-Version: 1.0``), a task that completes;
  ``a2a_stream``: ``SendStreamingMessage``, the SSE stream read to its end (the completed
  status is its last event); ``a2a_rest`` and ``a2a_rest_stream``: the HTTP+JSON binding's
  ``message:send`` and ``message:stream`` under ``/a2a/<network>/rest``; ``a2a_grpc`` and
  ``a2a_grpc_stream``: the gRPC binding (``lf.a2a.v1.A2AService``, the network as
  ``tenant``), :func:`a2a_grpc_client`. Our server and the SDK's own (bench/a2a_floor.py)
  serve the same paths, so one shape measures both.
- ``openai``: ``POST /v1/chat/completions``, not streamed.
- ``agui``: ``POST /ag-ui/{agent}``, the event stream read to ``RUN_FINISHED``.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import grpc

Chat = Callable[[], Awaitable[str]]
#: A request shape: URL, a body per call, extra headers, bytes in every successful answer.
Shape = tuple[str, Callable[[], bytes], dict[str, str], bytes]
_MCP_VERSION = "2026-07-28"
_ids = itertools.count(1)
#: This load process's own: an AG-UI thread id a later load (the next run or round) reused
#: would continue that thread, its history growing with every run.
_LOAD_ID = uuid.uuid4().hex[:12]


def _mcp(spec: dict[str, Any]) -> Shape:
    meta = {"io.modelcontextprotocol/protocolVersion": _MCP_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}

    def body() -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {
            "name": spec["agent"], "arguments": {"user_message": {"text": spec["text"]}}, "_meta": meta,
        }}).encode()

    headers = {"MCP-Protocol-Version": _MCP_VERSION, "Accept": "application/json, text/event-stream",
               "Mcp-Method": "tools/call", "Mcp-Name": spec["agent"]}
    return f"{spec['target']}/mcp", body, headers, b'"isError":false'


_A2A_HEADERS = {"A2A-Version": "1.0"}
_A2A_STREAM_HEADERS = {**_A2A_HEADERS, "Accept": "text/event-stream"}
#: In the answer of every A2A call that succeeded (the task's, or the stream's last event).
_COMPLETED = b"TASK_STATE_COMPLETED"


def _a2a_message(text: str, number: int) -> dict[str, Any]:
    return {"role": "ROLE_USER", "messageId": f"m{number}", "parts": [{"text": text}]}


def _a2a_jsonrpc(method: str, headers: dict[str, str]) -> Callable[[dict[str, Any]], Shape]:
    def shape(spec: dict[str, Any]) -> Shape:
        def body() -> bytes:
            number = next(_ids)
            return json.dumps({"jsonrpc": "2.0", "id": number, "method": method,
                               "params": {"message": _a2a_message(spec["text"], number)}}).encode()

        return f"{spec['target']}/a2a/{spec['agent']}", body, headers, _COMPLETED

    return shape


def _a2a_rest(verb: str, headers: dict[str, str]) -> Callable[[dict[str, Any]], Shape]:
    def shape(spec: dict[str, Any]) -> Shape:
        def body() -> bytes:
            return json.dumps({"message": _a2a_message(spec["text"], next(_ids))}).encode()

        return f"{spec['target']}/a2a/{spec['agent']}/rest/message:{verb}", body, headers, _COMPLETED

    return shape


def _openai(spec: dict[str, Any]) -> Shape:
    payload = json.dumps({"model": spec["agent"], "messages": [{"role": "user", "content": spec["text"]}]}).encode()
    return f"{spec['target']}/v1/chat/completions", lambda: payload, {}, b'"finish_reason"'


def _agui(spec: dict[str, Any]) -> Shape:
    def body() -> bytes:
        number = next(_ids)
        return json.dumps({"threadId": f"t{_LOAD_ID}-{number}", "runId": f"r{number}", "state": {}, "tools": [],
                           "context": [], "forwardedProps": {}, "messages": [{"id": f"m{number}", "role": "user",
                                                               "content": spec["text"]}]}).encode()

    return f"{spec['target']}/ag-ui/{spec['agent']}", body, {"Accept": "text/event-stream"}, b"RUN_FINISHED"


SHAPES = {
    "mcp": _mcp, "openai": _openai, "agui": _agui,
    "a2a": _a2a_jsonrpc("SendMessage", _A2A_HEADERS),
    "a2a_stream": _a2a_jsonrpc("SendStreamingMessage", _A2A_STREAM_HEADERS),
    "a2a_rest": _a2a_rest("send", _A2A_HEADERS),
    "a2a_rest_stream": _a2a_rest("stream", _A2A_STREAM_HEADERS),
}  # fmt: skip
#: A2A's gRPC binding: the method, and whether it streams.
GRPC_CALLS = {"a2a_grpc": ("SendMessage", False), "a2a_grpc_stream": ("SendStreamingMessage", True)}
#: Every transport this module's clients serve.
TRANSPORTS = frozenset(SHAPES) | frozenset(GRPC_CALLS)


async def frontend_client(spec: dict[str, Any], connections: int) -> tuple[Chat, Callable[[], Awaitable[None]]]:
    if spec["transport"] in GRPC_CALLS:
        return await a2a_grpc_client(spec)
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=connections)
    session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120))
    url, body, extra, success = SHAPES[spec["transport"]](spec)
    headers = {"Content-Type": "application/json", **extra}

    async def chat() -> str:
        async with session.post(url, data=body(), headers=headers) as response:
            payload = await response.read()
            if response.status == 200 and success in payload:
                return ""
            return f"HTTP {response.status}: {payload[-160:].decode(errors='replace')}"

    return chat, session.close


async def a2a_grpc_client(spec: dict[str, Any]) -> tuple[Chat, Callable[[], Awaitable[None]]]:
    """One channel for every worker (as bench.load's gRPC client), bytes out; the answer
    parsed only to see the task completed (the load generator's CPU, not the server's)."""
    from a2a.types import a2a_pb2  # here: every other load run starts without the SDK

    method, streams = GRPC_CALLS[spec["transport"]]
    channel = grpc.aio.insecure_channel(spec["target"])
    path = f"/lf.a2a.v1.A2AService/{method}"
    metadata = (("a2a-version", "1.0"),)
    completed = a2a_pb2.TaskState.TASK_STATE_COMPLETED

    def request() -> bytes:
        message = a2a_pb2.Message(role=a2a_pb2.Role.ROLE_USER, message_id=f"m{next(_ids)}",
                                  parts=[a2a_pb2.Part(text=spec["text"])])
        return a2a_pb2.SendMessageRequest(tenant=spec["agent"], message=message).SerializeToString()

    if streams:
        stream_call = channel.unary_stream(path)

        async def chat() -> str:
            last = b""
            async for raw in stream_call(request(), metadata=metadata):
                last = raw
            state = a2a_pb2.StreamResponse.FromString(last).status_update.status.state
            return "" if state == completed else f"last event: {a2a_pb2.TaskState.Name(state)}"
    else:
        unary_call = channel.unary_unary(path)

        async def chat() -> str:
            answer = a2a_pb2.SendMessageResponse.FromString(await unary_call(request(), metadata=metadata))
            state = answer.task.status.state
            return "" if state == completed else f"task: {a2a_pb2.TaskState.Name(state)}"

    async def close() -> None:
        await channel.close()

    return chat, close
