"""One JSON-RPC request or notification → its MCP answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types
from pydantic import ValidationError

from gateway.agents.interface import AgentsFailed
from gateway.host.bearer import challenge
from gateway.host.errors import RpcFailure
from gateway.mcp.calls import ProgressSink, ToolCaller, ToolGone, checked, refusal, unauthenticated
from gateway.mcp.modern import discover_result
from gateway.mcp.protocol import (
    FORBIDDEN,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    SERVER_BUSY,
    JsonRpcError,
    negotiate,
    wire,
)
from gateway.mcp.switch import MCP_PATH
from gateway.mcp.tools import ToolCatalog
from neuro_san.core.errors import Code, clip

log = logging.getLogger(__name__)

SERVER_NAME = "Neuro-san-MCPServer"  # as neuro-san names its server
SERVER_TITLE = "Neuro-san MCP Server"
INSTRUCTIONS = (
    "Each tool is an agent network. Call it with {\"user_message\": {\"text\": ...}}; to continue a "
    "conversation, pass back structuredContent.chat_context as arguments.chat_context."
)

#: Methods answered with an empty list, as neuro-san answers them.
_EMPTY_LISTS = {
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}

#: Methods of the advertised (empty) prompts and resources: every name is unknown, answered
#: with MCP's error for an unknown name (not -32601: the capability is advertised).
_UNKNOWN_NAMES = {
    "prompts/get": ("name", INVALID_PARAMS, "Unknown prompt"),
    "resources/read": ("uri", RESOURCE_NOT_FOUND, "Resource not found"),
}


@dataclass(slots=True)
class Call:
    """One request as the dispatcher sees it."""

    method: str
    params: dict[str, Any]
    metadata: Sequence[tuple[str, Any]]
    #: Set when the client asked for progress and the response can carry notifications.
    progress: ProgressSink | None = None
    #: A 2026-07-28 request (already checked by :func:`gateway.mcp.modern.admit`).
    modern: bool = False


class Dispatcher:
    def __init__(self, catalog: ToolCatalog, caller: ToolCaller, version: str) -> None:
        self._catalog = catalog
        self._caller = caller
        self._version = version
        self._methods: dict[str, Callable[[Call], Awaitable[dict[str, Any]]]] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
        }
        #: Methods of the sessionless revision only (its version gate drops initialize and ping).
        self._modern_methods: dict[str, Callable[[Call], Awaitable[dict[str, Any]]]] = {
            "server/discover": self._discover,
        }
        # Built once: it is the same on every modern result, and a pydantic model dumped per
        # call cost ~5 µs of a tools/call. Shared, so never changed (finish copies it out).
        self._server_info = wire(mcp_types.Implementation(name=SERVER_NAME, title=SERVER_TITLE, version=version))

    def server_info(self) -> dict[str, Any]:
        """This server's ``Implementation`` on the wire (stamped on modern results); the
        same dict every time, not to be changed."""
        return self._server_info

    def knows(self, method: str) -> bool:
        return method in self._methods or method in _EMPTY_LISTS or method in _UNKNOWN_NAMES

    async def answer(self, call: Call) -> dict[str, Any]:
        """The result object; raises JsonRpcError for JSON-RPC errors."""
        if call.method in _EMPTY_LISTS:
            return {_EMPTY_LISTS[call.method]: []}
        if call.method in _UNKNOWN_NAMES:
            field, code, text = _UNKNOWN_NAMES[call.method]
            name = clip(call.params.get(field, ""))
            raise JsonRpcError(code, f"{text}: {name}", data={field: name} if code == RESOURCE_NOT_FOUND else None)
        handler = self._methods.get(call.method)
        if call.modern:
            handler = self._modern_methods.get(call.method, handler)
        if handler is None:
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {clip(call.method)}")
        try:
            return await handler(call)
        except (JsonRpcError, asyncio.CancelledError, ConnectionError):
            raise  # ConnectionError: the client went away while progress was being written
        except AgentsFailed as error:
            raise _protocol_error(error.failure) from None
        except Exception:
            log.exception("MCP %s failed", call.method)
            raise JsonRpcError(INTERNAL_ERROR, f"Internal error while handling {call.method}") from None

    async def _initialize(self, call: Call) -> dict[str, Any]:
        try:
            params = mcp_types.InitializeRequestParams.model_validate(call.params)
        except ValidationError as error:
            raise JsonRpcError(INVALID_PARAMS, f"Invalid params for initialize: {_first_problem(error)}") from None
        # Ask the service once, so that a caller without valid credentials learns it now (401).
        await self._catalog.tools(call.metadata)
        result = mcp_types.InitializeResult(
            protocol_version=negotiate(params.protocol_version),
            capabilities=mcp_types.ServerCapabilities(
                tools=mcp_types.ToolsCapability(list_changed=False),
                prompts=mcp_types.PromptsCapability(list_changed=False),
                resources=mcp_types.ResourcesCapability(subscribe=False, list_changed=False),
            ),
            server_info=mcp_types.Implementation(name=SERVER_NAME, title=SERVER_TITLE, version=self._version),
            instructions=INSTRUCTIONS,
        )
        return wire(result)

    async def _discover(self, call: Call) -> dict[str, Any]:
        # As initialize: ask the service once, so that a caller without valid credentials
        # learns it now (401, and the OAuth metadata to get some).
        await self._catalog.tools(call.metadata)
        return discover_result(INSTRUCTIONS)

    async def _ping(self, call: Call) -> dict[str, Any]:
        return {}

    async def _tools_list(self, call: Call) -> dict[str, Any]:
        return {"tools": await self._catalog.describe(call.metadata)}

    async def _tools_call(self, call: Call) -> dict[str, Any]:
        result = await self._call_tool(call)
        # At 2026-07-28 the revision's own check (gateway.mcp.modern.finish) is the one.
        return result if call.modern else checked(result)

    async def _call_tool(self, call: Call) -> dict[str, Any]:
        name = call.params.get("name")
        if not isinstance(name, str) or not name:
            raise JsonRpcError(INVALID_PARAMS, "Invalid params for tools/call: name must be a non-empty string")
        arguments = call.params.get("arguments")
        arguments = {} if arguments is None else arguments
        # Steady state: the caller's kept listing names the network, and the chat is the one call.
        tool, kept = await self._catalog.resolve(name, call.metadata)
        if tool is not None:
            try:
                return await self._caller.call(tool, arguments, call.metadata, call.progress, kept=kept)
            except ToolGone:  # the kept listing was stale: list once more
                tool, _ = await self._catalog.resolve(name, call.metadata, fresh=True)
        if tool is None:
            # Not listed for this caller: a network it may not call answers 403 with the
            # scope to ask for (OAuth), anything else is an unknown tool.
            await self._catalog.check_callable(name, call.metadata)
            raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {clip(name)}")
        return await self._caller.call(tool, arguments, call.metadata, call.progress)


def _protocol_error(failure: RpcFailure) -> JsonRpcError:
    code, details = Code(failure.code), failure.message
    if code == Code.UNAUTHENTICATED:
        return unauthenticated(failure)
    if code == Code.PERMISSION_DENIED:  # a token for no network here: which scope to ask for
        return JsonRpcError(FORBIDDEN, f"Forbidden: {details}", http_status=403,
                            headers=challenge(failure, MCP_PATH))
    if failure.is_refusal:  # caller limits (429) or a busy / draining server (503), as REST says
        return refusal(failure)
    if code in (Code.RESOURCE_EXHAUSTED, Code.UNAVAILABLE):
        return JsonRpcError(SERVER_BUSY, f"Server unavailable, try again later: {details}", http_status=503)
    return JsonRpcError(INTERNAL_ERROR, f"The agent service failed: {code.name}: {details}")


def _first_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid"))
