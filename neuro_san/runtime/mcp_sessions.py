"""MCP client sessions, shared by all requests of a server (the official ``mcp`` SDK).

neuro-san opens a new MCP session for every tool call and lists the tools again on
every request: 11 HTTP requests for one call. Here a session per (server URL, headers)
stays open and is reused, and tool lists are cached, so a warm call is one POST.

* Sessions are keyed by URL *and* headers: one caller's ``Authorization`` never serves
  another's. At most ``max_sessions`` stay open (least recently used closed first, never
  one in use), and one idle for ``idle_seconds`` is closed on the next use of the pool.
* Tool lists expire after ``tools_ttl_seconds`` (bounded to ``max_sessions`` entries).
* Opening and listing are bounded by ``open_timeout_seconds``: an unreachable server is
  an error in seconds, never a hang.
* A chat cancelled during a call sends ``notifications/cancelled`` for that request, so
  the server stops the tool; the session stays usable for others. (SDK 2.x sends it
  itself when the awaiting task is cancelled: its "courtesy cancel".)
* A session the server forgot (HTTP 404, e.g. after its restart) is reopened once.
* ``aclose()`` (server shutdown) ends every session (HTTP DELETE).

An ``anyio`` task group must be left by the task that entered it, so each session lives
in its own task (``_Connection._run``) and requests from any chat go through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import httpx2
from mcp import ClientSession, MCPError, types
from mcp.client.streamable_http import streamable_http_client

log = logging.getLogger(__name__)

Headers = Mapping[str, str]
_Key = tuple[str, tuple[tuple[str, str], ...]]


class McpUnavailable(Exception):
    """The MCP server could not be reached, or the session failed."""


def describe_error(error: BaseException) -> str:
    """``Type: message`` of the first real cause, unwrapping the SDK's task groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, McpUnavailable) and error.__cause__ is not None:
        return describe_error(error.__cause__)
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Connection:
    """One open MCP session, owned by its own task."""

    def __init__(self, url: str, headers: Headers, timeout: httpx2.Timeout) -> None:
        self.url = url
        self.headers = dict(headers)
        self.last_used = time.monotonic()
        self.in_use = 0
        self.closed = False
        #: Why the session ended, when it failed.
        self.error = ""
        #: The server answered 404 to our session id: it forgot the session (restarted).
        #: Seen on the HTTP response, because SDK 2.x hands the server's JSON-RPC error
        #: body on (e.g. "Session not found") without the status, so no error code or
        #: message tells this case apart.
        self.forgotten = False
        self._timeout = timeout
        self._ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        # The exception is handed to every waiter; this keeps asyncio from logging it again.
        self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._stop = asyncio.Event()
        #: Set when the session is over, however it ended.
        self.ended = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def session(self) -> ClientSession:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"mcp session {self.url}")
        # Shielded: a caller giving up must not fail the session for the others waiting.
        return await asyncio.shield(self._ready)

    async def _run(self) -> None:
        try:
            async with (
                httpx2.AsyncClient(
                    headers=self.headers, timeout=self._timeout, event_hooks={"response": [self._note_response]}
                ) as client,
                streamable_http_client(self.url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as error:  # reported to the waiters; the task ends quietly
            self.error = describe_error(error)
            if not self._ready.done():
                self._ready.set_exception(McpUnavailable(describe_error(error)))
            elif not isinstance(error, asyncio.CancelledError):
                log.info("MCP session to %s ended: %s", _safe_url(self.url), type(error).__name__)
        finally:
            self.closed = True
            self.ended.set()
            if not self._ready.done():
                self._ready.set_exception(McpUnavailable("the session was closed"))

    async def _note_response(self, response: httpx2.Response) -> None:
        if response.status_code == 404 and response.request.headers.get("mcp-session-id"):
            self.forgotten = True

    async def close(self, grace: float = 3.0) -> None:
        self.closed = True
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), grace)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def _safe_url(url: str) -> str:
    """``url`` without any ``user:password@``, for logs."""
    scheme, separator, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{separator}{host.rsplit('@', 1)[-1]}{slash}{path}"


class McpSessions:
    """The pool of MCP sessions and the cache of tool lists."""

    def __init__(
        self,
        max_sessions: int = 64,
        idle_seconds: float = 300.0,
        tools_ttl_seconds: float = 60.0,
        open_timeout_seconds: float = 15.0,
        call_timeout_seconds: float = 300.0,
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.tools_ttl_seconds = tools_ttl_seconds
        self.open_timeout_seconds = open_timeout_seconds
        self.call_timeout_seconds = call_timeout_seconds
        self._connections: OrderedDict[_Key, _Connection] = OrderedDict()
        self._tool_lists: OrderedDict[_Key, tuple[float, list[types.Tool]]] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()

    @staticmethod
    def _key(url: str, headers: Headers) -> _Key:
        return url, tuple(sorted((k.lower(), v) for k, v in headers.items()))

    def _retire(self, key: _Key, connection: _Connection) -> None:
        """Forget ``connection`` and close it in the background."""
        if self._connections.get(key) is connection:
            del self._connections[key]
        task = asyncio.create_task(connection.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _sweep(self, keep: _Key) -> None:
        """Close ended and idle sessions, then the least recently used ones past the bound;
        never ``keep`` (the one being asked for) nor one in use."""
        now = time.monotonic()
        for key, connection in list(self._connections.items()):
            idle = connection.in_use == 0 and now - connection.last_used > self.idle_seconds
            if key != keep and (connection.closed or idle):
                self._retire(key, connection)
        excess = len(self._connections) - self.max_sessions
        for key, connection in list(self._connections.items()):
            if excess <= 0:
                break
            if key != keep and connection.in_use == 0:
                self._retire(key, connection)
                excess -= 1

    def _connection(self, url: str, headers: Headers) -> tuple[_Key, _Connection]:
        key = self._key(url, headers)
        connection = self._connections.get(key)
        if connection is not None and connection.closed:
            self._retire(key, connection)
            connection = None
        if connection is None:
            # The MCP request timeout (call_timeout_seconds) must fire before the HTTP read
            # timeout: it cancels the tool on the server and keeps the session, whereas a
            # read timeout only drops the response stream. The read timeout is the backstop.
            read = self.call_timeout_seconds + self.open_timeout_seconds
            timeout = httpx2.Timeout(self.open_timeout_seconds, read=read)
            connection = self._connections[key] = _Connection(url, headers, timeout)
        self._connections.move_to_end(key)
        self._sweep(keep=key)
        connection.last_used = time.monotonic()
        return key, connection

    async def _open(self, key: _Key, connection: _Connection) -> ClientSession:
        try:
            async with asyncio.timeout(self.open_timeout_seconds):
                return await connection.session()
        except TimeoutError as error:
            self._retire(key, connection)
            raise McpUnavailable(f"no answer within {self.open_timeout_seconds:g} s") from error
        except McpUnavailable:
            self._retire(key, connection)
            raise

    async def list_tools(self, url: str, headers: Headers) -> list[types.Tool]:
        """The server's tools, from the cache when it is fresh. Raises McpUnavailable."""
        key = self._key(url, headers)
        cached = self._tool_lists.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        key, connection = self._connection(url, headers)
        connection.in_use += 1
        try:
            session = await self._open(key, connection)
            tools: list[types.Tool] = []
            cursor: str | None = None
            async with asyncio.timeout(self.open_timeout_seconds):
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await session.list_tools(params=params)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except (MCPError, TimeoutError, httpx2.HTTPError) as error:
            self._retire(key, connection)
            raise McpUnavailable(describe_error(error)) from error
        finally:
            connection.in_use -= 1
        self._tool_lists[key] = (time.monotonic() + self.tools_ttl_seconds, tools)
        self._tool_lists.move_to_end(key)
        while len(self._tool_lists) > self.max_sessions:
            self._tool_lists.popitem(last=False)
        return tools

    async def call_tool(
        self, url: str, headers: Headers, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """One ``tools/call``. Raises McpUnavailable or MCPError; cancellation is passed
        on to the server."""
        for attempt in (1, 2):
            key, connection = self._connection(url, headers)
            connection.in_use += 1
            try:
                session = await self._open(key, connection)
                return await self._call(connection, session, name, arguments)
            except MCPError as error:
                forgotten = connection.forgotten
                if forgotten or error.code == types.CONNECTION_CLOSED or connection.closed:
                    self._retire(key, connection)
                if not forgotten or attempt == 2:
                    raise
            except httpx2.HTTPError as error:
                self._retire(key, connection)
                raise McpUnavailable(describe_error(error)) from error
            finally:
                connection.in_use -= 1
                connection.last_used = time.monotonic()
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _call(
        self, connection: _Connection, session: ClientSession, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """The call, raced against the end of the session: a request must not outlive the
        session that carries it (the server went away), whatever the SDK does with it."""
        # Cancelling ``running`` makes the SDK send ``notifications/cancelled`` for the
        # request it carries (SDK 2.x's courtesy cancel, shielded and bounded by the SDK).
        running = asyncio.ensure_future(
            session.call_tool(name, arguments, read_timeout_seconds=self.call_timeout_seconds)
        )
        ended = asyncio.ensure_future(connection.ended.wait())
        try:
            await asyncio.wait({running, ended}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            running.cancel()
            # Let the SDK's cancel notification go out before the chat's cancellation
            # goes on; bounded, so a wedged transport cannot hold the chat.
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(running), 2.0)
            raise
        finally:
            ended.cancel()
        if running.done():
            return running.result()
        running.cancel()
        raise McpUnavailable(f"the MCP session ended during the call: {connection.error or 'closed'}")

    async def aclose(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        self._tool_lists.clear()
        await asyncio.gather(*(c.close() for c in connections), *self._closing, return_exceptions=True)
