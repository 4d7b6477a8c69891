"""The load generator's clients of the protocol front-ends (S10), one chat each, as their
own clients call them. Each returns ``""`` when the call succeeded, else what went wrong.

- ``mcp``: ``tools/call`` at MCP 2026-07-28 (sessionless: one POST, no handshake), JSON.
- ``a2a``: A2A JSON-RPC ``SendMessage`` (``A2A-Version: 1.0``), a task that completes.
- ``openai``: ``POST /v1/chat/completions``, not streamed.
- ``agui``: ``POST /ag-ui/{agent}``, the event stream read to ``RUN_FINISHED``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

Chat = Callable[[], Awaitable[str]]
_MCP_VERSION = "2026-07-28"
_ids = itertools.count(1)


def _mcp(spec: dict[str, Any]) -> tuple[str, Callable[[], bytes], dict[str, str], bytes]:
    meta = {"io.modelcontextprotocol/protocolVersion": _MCP_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}

    def body() -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {
            "name": spec["agent"], "arguments": {"user_message": {"text": spec["text"]}}, "_meta": meta,
        }}).encode()

    headers = {"MCP-Protocol-Version": _MCP_VERSION, "Accept": "application/json, text/event-stream",
               "Mcp-Method": "tools/call", "Mcp-Name": spec["agent"]}
    return f"{spec['target']}/mcp", body, headers, b'"isError":false'


def _a2a(spec: dict[str, Any]) -> tuple[str, Callable[[], bytes], dict[str, str], bytes]:
    def body() -> bytes:
        number = next(_ids)
        return json.dumps({"jsonrpc": "2.0", "id": number, "method": "SendMessage", "params": {"message": {
            "role": "ROLE_USER", "messageId": f"m{number}", "parts": [{"text": spec["text"]}],
        }}}).encode()

    return f"{spec['target']}/a2a/{spec['agent']}", body, {"A2A-Version": "1.0"}, b"TASK_STATE_COMPLETED"


def _openai(spec: dict[str, Any]) -> tuple[str, Callable[[], bytes], dict[str, str], bytes]:
    payload = json.dumps({"model": spec["agent"], "messages": [{"role": "user", "content": spec["text"]}]}).encode()
    return f"{spec['target']}/v1/chat/completions", lambda: payload, {}, b'"finish_reason"'


def _agui(spec: dict[str, Any]) -> tuple[str, Callable[[], bytes], dict[str, str], bytes]:
    def body() -> bytes:
        number = next(_ids)
        return json.dumps({"threadId": f"t{number}", "runId": f"r{number}", "state": {}, "tools": [], "context": [],
                           "forwardedProps": {}, "messages": [{"id": f"m{number}", "role": "user",
                                                               "content": spec["text"]}]}).encode()

    return f"{spec['target']}/ag-ui/{spec['agent']}", body, {"Accept": "text/event-stream"}, b"RUN_FINISHED"


SHAPES = {"mcp": _mcp, "a2a": _a2a, "openai": _openai, "agui": _agui}


async def frontend_client(spec: dict[str, Any], connections: int) -> tuple[Chat, Callable[[], Awaitable[None]]]:
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
