"""``tools/call``: one chat with a network through AgentService/StreamingChat.

The answer is neuro-san's: the text of the AGENT_FRAMEWORK messages as ``content``, and
``structuredContent`` with the answer's ``structure``, the ``sly_data`` the network lets
back, and the ``chat_context`` to continue with. Failures of the network are tool
errors (``isError``), as the MCP specification assigns them; only a caller the server
does not authenticate is an HTTP 401.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import mcp_types
from neuro_san.api.grpc import agent_pb2

from gateway.host.errors import GatewayError, RpcFailure, rpc_failure
from gateway.mcp.protocol import UNAUTHENTICATED, JsonRpcError, wire
from gateway.mcp.tools import McpTool
from gateway.transcoder.marshal import MessageCodec

#: Reports one step of the network's work: (steps so far, what happened).
ProgressSink = Callable[[int, str], Awaitable[None]]

FILTER_TYPES = frozenset({"UNKNOWN", "MINIMAL", "MAXIMAL"})
ARGUMENT_KEYS = frozenset({"user_message", "sly_data", "chat_context", "chat_filter"})
_REQUEST_CODEC = MessageCodec(agent_pb2.ChatRequest)
_RESPONSE_CODEC = MessageCodec(agent_pb2.ChatResponse)
_PROGRESS_TEXT_LIMIT = 200
#: The prompt and the user's own text are no news to the client.
_NOT_PROGRESS = frozenset({"SYSTEM", "HUMAN"})


def tool_error(text: str) -> dict[str, Any]:
    """A failed call as MCP reports it: a result with ``isError``, readable by the model."""
    return wire(mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True))


def chat_request(arguments: Any, progress: bool) -> agent_pb2.ChatRequest:
    """The ChatRequest for ``arguments``; raises ValueError saying what is wrong (never
    echoing the values: sly_data may hold secrets)."""
    if not isinstance(arguments, dict):
        raise ValueError("arguments must be an object with user_message")
    unknown = sorted(set(arguments) - ARGUMENT_KEYS)
    if unknown:
        raise ValueError(f"unknown argument(s) {unknown}: only user_message, sly_data, chat_context, chat_filter")
    if "user_message" not in arguments:
        raise ValueError('user_message is required, e.g. {"user_message": {"text": "..."}}')
    for key in ARGUMENT_KEYS & set(arguments):
        if not isinstance(arguments[key], dict):
            raise ValueError(f"{key} must be an object")
    chat_filter = arguments.get("chat_filter", {})
    if set(chat_filter) - {"chat_filter_type"} or chat_filter.get("chat_filter_type", "MINIMAL") not in FILTER_TYPES:
        raise ValueError(f"chat_filter must be {{\"chat_filter_type\": one of {sorted(FILTER_TYPES)}}}")
    data = dict(arguments)
    if progress:  # the steps to report come only with the MAXIMAL filter
        data["chat_filter"] = {"chat_filter_type": "MAXIMAL"}
    message = agent_pb2.ChatRequest()
    try:
        _REQUEST_CODEC.fill(_REQUEST_CODEC.normalize(data), message)
    except GatewayError as error:
        raise ValueError(error.message) from None
    return message


class ToolCaller:
    """Runs tools/call through the invoker's StreamingChat."""

    def __init__(self, streaming_chat: Any, deadline_seconds: float | None) -> None:
        self._chat = streaming_chat
        self._deadline = deadline_seconds

    async def call(
        self, tool: McpTool, arguments: Any, metadata: Sequence[tuple[str, Any]], progress: ProgressSink | None
    ) -> dict[str, Any]:
        """The CallToolResult (wire form). Cancelling the awaiting task cancels the chat."""
        try:
            request = chat_request(arguments, progress is not None)
        except ValueError as error:
            return tool_error(f"Invalid arguments for tool {tool.name}: {error}")
        call = self._chat(request, metadata=[*metadata, ("agent-name", tool.network)], timeout=self._deadline)
        texts: list[str] = []
        final: dict[str, Any] = {}
        sly_data: dict[str, Any] = {}
        steps = 0
        try:
            while (reply := await call.read()) is not grpc.aio.EOF:
                message = _RESPONSE_CODEC.to_dict(reply).get("response") or {}
                if message.get("type") == "AGENT_FRAMEWORK":
                    texts.append(str(message.get("text", "")))
                    final = message
                    sly_data.update(message.get("sly_data") or {})
                elif progress is not None and message.get("type") not in _NOT_PROGRESS:
                    steps += 1
                    await progress(steps, _step_text(message))
        except grpc.aio.AioRpcError as error:
            return _rpc_failure(tool, error)
        finally:
            if not call.done():
                call.cancel()  # the client went away or cancelled: stop the chat and its LLM calls
        return _answer(texts, final, sly_data)


def _answer(texts: list[str], final: dict[str, Any], sly_data: dict[str, Any]) -> dict[str, Any]:
    text = "".join(texts)
    structured: dict[str, Any] = {"chat_context": final.get("chat_context") or {}}
    structure = final.get("structure")
    if structure is not None:
        structured["structure"] = structure
        # As neuro-san: models that ignore structuredContent still see the structure.
        text += "\n```json\n" + json.dumps(structure, indent=2, ensure_ascii=False) + "\n```"
    if sly_data:
        structured["sly_data"] = sly_data
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], structured_content=structured, is_error=False
    )
    return wire(result)


def _step_text(message: dict[str, Any]) -> str:
    origin = message.get("origin") or []
    where = "/".join(str(o.get("tool", "")) for o in origin if isinstance(o, dict))
    kind = str(message.get("type", "")).lower()
    text = str(message.get("text") or "")
    if len(text) > _PROGRESS_TEXT_LIMIT:
        text = text[:_PROGRESS_TEXT_LIMIT] + "…"
    return f"{where} {kind}: {text}".strip() if where else f"{kind}: {text}"


def refusal(failure: RpcFailure) -> JsonRpcError:
    """A refused request (caller over its rate limit or token budget: 429; server busy or
    draining: 503) as a JSON-RPC error with the service's own message, sent with the HTTP
    status and ``Retry-After`` of the REST gateway when the response has not started."""
    return JsonRpcError(failure.jsonrpc_code, failure.message, data=failure.jsonrpc_data(),
                        http_status=failure.http_status, headers=failure.headers())


def _rpc_failure(tool: McpTool, error: grpc.aio.AioRpcError) -> dict[str, Any]:
    code, details = error.code(), error.details() or ""
    failure = rpc_failure(error)
    if failure.is_refusal:  # not the network's failure: the request is refused for a while
        raise refusal(failure)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        raise JsonRpcError(UNAUTHENTICATED, f"Unauthenticated: {details}", http_status=401)
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return tool_error(f"Tool not authorized: {tool.name}")
    if code == grpc.StatusCode.NOT_FOUND:
        return tool_error(f"Tool not found: {tool.name}")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return tool_error(f"Timeout for tool {tool.name}: {details}")
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return tool_error(f"Invalid arguments for tool {tool.name}: {details}")
    if code == grpc.StatusCode.CANCELLED:
        return tool_error(f"Stream closed for tool {tool.name}")
    return tool_error(f"Failed to execute tool {tool.name}: {details}")
