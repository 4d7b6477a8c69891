"""A real MCP server for tests: the official SDK's MCPServer (2.x's FastMCP) over Streamable HTTP.

It runs under uvicorn in a thread on a free loopback port and records every HTTP
request it receives (method, headers, JSON-RPC method), so tests can count requests and
check headers. Its tools: ``math/add`` (renamed ``math__add`` for the LLM), ``echo_text``,
``fail`` (raises ToolError), ``measure`` (text plus different structured content) and ``slow``
(sleeps; records that it was cancelled).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from tests.support.servers import free_port


@dataclass
class SeenRequest:
    method: str
    headers: dict[str, str]
    rpc: str = ""


class _Recorder:
    """ASGI middleware: notes each HTTP request before the MCP app handles it."""

    def __init__(self, app: Any, seen: list[SeenRequest]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry = SeenRequest(scope["method"], {k.decode().lower(): v.decode() for k, v in scope["headers"]})
        self.seen.append(entry)
        body = bytearray()

        async def recording_receive() -> Any:
            message = await receive()
            if message.get("type") == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body") and body:
                    try:
                        entry.rpc = str(json.loads(bytes(body)).get("method", "response"))
                    except (ValueError, AttributeError):
                        entry.rpc = "?"
            return message

        await self.app(scope, recording_receive, send)


class McpTestServer:
    """``with McpTestServer() as server:`` … ``server.url`` is ``http://127.0.0.1:<port>/mcp``."""

    def __init__(self, port: int = 0) -> None:
        self.port = port or free_port()
        self.seen: list[SeenRequest] = []
        self.slow_started = threading.Event()
        self.slow_cancelled = threading.Event()
        mcp: MCPServer[Any] = MCPServer("test-tools", log_level="WARNING")
        self._define_tools(mcp)
        app = _Recorder(mcp.streamable_http_app(host="127.0.0.1"), self.seen)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def _define_tools(self, mcp: MCPServer[Any]) -> None:
        @mcp.tool(name="math/add", description="Add a and b.")
        def add(a: float, b: float) -> str:
            return f"sum={a + b:g}"

        @mcp.tool(description="Echo the text back.")
        def echo_text(text: str) -> str:
            return f"echo: {text}"

        @mcp.tool(description="Always fails.")
        def fail(reason: str = "boom") -> str:
            # ToolError, a deliberate failure: SDK 2.x sends its text to the client (any
            # other exception is a crash, whose text stays on the server).
            raise ToolError(reason)

        @mcp.tool(description="Measure a text.")
        def measure(text: str) -> types.CallToolResult:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"len is {len(text)}")],
                structured_content={"len": len(text)},
            )

        @mcp.tool(description="Sleep for a while.")
        async def slow(seconds: float) -> str:
            self.slow_started.set()
            try:
                await asyncio.sleep(seconds)  # the behaviour: a slow tool
            except asyncio.CancelledError:
                self.slow_cancelled.set()
                raise
            return "slept"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> McpTestServer:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def __enter__(self) -> McpTestServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def calls(self, rpc: str) -> list[SeenRequest]:
        return [s for s in self.seen if s.rpc == rpc]
