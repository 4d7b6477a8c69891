"""``tools/call``: one chat with a network through the agents facade (:mod:`gateway.agents`).

The answer is neuro-san's: the text of the network's answer as ``content``, and
``structuredContent`` with the answer's ``structure``, the ``sly_data`` the network lets
back, and the ``chat_context`` to continue with. Failures of the network are tool
errors (``isError``), as the MCP specification assigns them; only a caller the server
does not authenticate is an HTTP 401.

With a progress token the chat is MAXIMAL and asks for token deltas (``stream_tokens``):
each step is a progress notification, and so is each piece of the front man's answer,
whose ``message`` is then the answer's text so far (a client shows it growing), or its
last :data:`ANSWER_TAIL_LIMIT` characters once it is longer: the whole answer comes in the
result, and sending all of it with every delta would cost the square of its length.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mcp_types

from gateway.agents.interface import Agents, Answer, AnswerDelta, Caller, ChatFailed, InvalidTurn, Step, Turn
from gateway.host.bearer import challenge
from gateway.host.errors import RpcFailure
from gateway.mcp.protocol import FORBIDDEN, UNAUTHENTICATED, JsonRpcError, wire
from gateway.mcp.switch import MCP_PATH
from gateway.mcp.tools import McpTool
from neuro_san.core.errors import AgentNotFound, Code

#: The reason of the service's "agent not served here".
AGENT_NOT_FOUND = AgentNotFound.reason

#: Reports one step of the network's work: (steps so far, what happened).
ProgressSink = Callable[[int, str], Awaitable[None]]

FILTER_TYPES = frozenset({"UNKNOWN", "MINIMAL", "MAXIMAL"})
ARGUMENT_KEYS = frozenset({"user_message", "sly_data", "chat_context", "chat_filter"})
_PROGRESS_TEXT_LIMIT = 200
#: The most of a growing answer one progress message carries: its end, after an ellipsis.
ANSWER_TAIL_LIMIT = 1000


def call_result(text: str, *, is_error: bool, structured: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` as plain data, its fields in the order the SDK's model dumps them,
    and not yet checked: each era checks it once against its own schema on the way out
    (:func:`checked` for the handshake era, :func:`gateway.mcp.modern.finish` at 2026-07-28).
    Building the SDK's model and dumping it here as well cost ~11 µs of a call, for nothing
    at 2026-07-28, whose check validates and dumps it again."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    result["isError"] = is_error
    return result


def checked(result: dict[str, Any]) -> dict[str, Any]:
    """A :func:`call_result` as the handshake era sends it: validated by the SDK's
    ``CallToolResult`` and dumped by it (:func:`~gateway.mcp.protocol.wire`)."""
    return wire(mcp_types.CallToolResult.model_validate(result))


def tool_error(text: str) -> dict[str, Any]:
    """A failed call as MCP reports it: a result with ``isError``, readable by the model
    (unchecked: see :func:`call_result`)."""
    return call_result(text, is_error=True)


def chat_turn(arguments: Any, progress: bool) -> Turn:
    """The turn ``arguments`` ask for; raises ValueError saying what is wrong (never
    echoing the values: sly_data may hold secrets). The API's own checks (the fields of
    user_message, chat_context…) are the facade's, when the chat is asked for."""
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
    # The steps to report come only with the MAXIMAL filter; the answer as it grows with tokens.
    filter_type = "MAXIMAL" if progress else chat_filter.get("chat_filter_type")
    if filter_type is None and "chat_filter" in arguments:
        filter_type = "UNKNOWN"  # sent empty: unset, as before
    return Turn(arguments["user_message"], arguments.get("chat_context"), arguments.get("sly_data"),
                filter_type, stream_tokens=progress)


class ToolGone(Exception):
    """The network a kept listing named for this tool is not served (any more): the chat was
    refused before it started, so the caller may list again and call once more."""


class ToolCaller:
    """Runs tools/call as one chat through the agents facade."""

    def __init__(self, agents: Agents) -> None:
        self._agents = agents

    async def call(
        self, tool: McpTool, arguments: Any, metadata: Sequence[tuple[str, Any]], progress: ProgressSink | None,
        *, kept: bool = False,
    ) -> dict[str, Any]:
        """The CallToolResult, unchecked (:func:`call_result`). Cancelling the awaiting task cancels the chat.
        ``kept``: ``tool`` comes from a kept listing; raises :class:`ToolGone` when its
        network is not served, before anything of the chat happened."""
        try:
            stream = self._agents.chat(tool.network, chat_turn(arguments, progress is not None), Caller(metadata))
        except (ValueError, InvalidTurn) as error:
            return tool_error(f"Invalid arguments for tool {tool.name}: {error}")
        answers: list[Answer] = []
        steps = 0
        so_far = _AnswerTail()
        first = True
        async with stream:  # leaving early (the client went away or cancelled) stops the chat
            async for event in stream:
                if first and kept and isinstance(event, ChatFailed) and _gone(event):
                    raise ToolGone(tool.name)
                first = False
                if isinstance(event, AnswerDelta):
                    # The front man's answer as it grows (a client shows it growing).
                    if progress is not None:
                        steps += 1
                        await progress(steps, so_far.add(event.text))
                elif isinstance(event, Answer):
                    answers.append(event)
                elif isinstance(event, Step):
                    if progress is not None:
                        steps += 1
                        await progress(steps, _step_text(event))
                elif isinstance(event, ChatFailed):
                    return _failed(tool, event)
        return _answer(answers)


class _AnswerTail:
    """The end of the answer written so far, at most :data:`ANSWER_TAIL_LIMIT` characters."""

    def __init__(self) -> None:
        self._kept = ""
        self._cut = False

    def add(self, delta: str) -> str:
        """Take ``delta``; the progress message: the answer so far, or an ellipsis and its end."""
        joined = self._kept + delta
        self._cut = self._cut or len(joined) > ANSWER_TAIL_LIMIT
        self._kept = joined[-ANSWER_TAIL_LIMIT:]
        return "\u2026" + self._kept[1:] if self._cut else self._kept


def _gone(failed: ChatFailed) -> bool:
    """The service's "agent not served here" for the network itself (not a failure inside it)."""
    return failed.code == Code.NOT_FOUND and failed.reason == AGENT_NOT_FOUND


def _answer(answers: list[Answer]) -> dict[str, Any]:
    text = "".join(answer.text for answer in answers)
    final = answers[-1] if answers else Answer("")
    structured: dict[str, Any] = {"chat_context": dict(final.chat_context or {})}
    if final.structure is not None:
        structured["structure"] = final.structure
        # As neuro-san: models that ignore structuredContent still see the structure.
        text += "\n```json\n" + json.dumps(final.structure, indent=2, ensure_ascii=False) + "\n```"
    sly_data: dict[str, Any] = {}
    for answer in answers:
        sly_data.update(answer.sly_data)
    if sly_data:
        structured["sly_data"] = sly_data
    return call_result(text, structured=structured, is_error=False)


def _step_text(step: Step) -> str:
    where = "/".join(step.origin)
    kind = step.kind.lower()
    text = step.text
    if len(text) > _PROGRESS_TEXT_LIMIT:
        text = text[:_PROGRESS_TEXT_LIMIT] + "…"
    return f"{where} {kind}: {text}".strip() if where else f"{kind}: {text}"


def unauthenticated(failure: RpcFailure) -> JsonRpcError:
    """401 with the ``WWW-Authenticate`` challenge (where the OAuth metadata is, with OAuth on)."""
    return JsonRpcError(UNAUTHENTICATED, f"Unauthenticated: {failure.message}", http_status=401,
                        headers=challenge(failure, MCP_PATH))


def refusal(failure: RpcFailure) -> JsonRpcError:
    """A refused request (caller over its rate limit or token budget: 429; server busy or
    draining: 503) as a JSON-RPC error with the service's own message, sent with the HTTP
    status and ``Retry-After`` of the REST gateway when the response has not started."""
    return JsonRpcError(failure.jsonrpc_code, failure.message, data=failure.jsonrpc_data(),
                        http_status=failure.http_status, headers=failure.headers())


def _failed(tool: McpTool, failed: ChatFailed) -> dict[str, Any]:
    code, details, failure = failed.code, failed.message, failed.failure
    if failure.is_refusal:  # not the network's failure: the request is refused for a while
        raise refusal(failure)
    if code == Code.UNAUTHENTICATED:
        raise unauthenticated(failure)
    if code == Code.PERMISSION_DENIED:
        if failure.reason == "INSUFFICIENT_SCOPE":  # OAuth: the host asks for the scope, then retries
            raise JsonRpcError(FORBIDDEN, f"Forbidden: {details}", http_status=403,
                               headers=challenge(failure, MCP_PATH))
        return tool_error(f"Tool not authorized: {tool.name}")
    if code == Code.NOT_FOUND:
        return tool_error(f"Tool not found: {tool.name}")
    if code == Code.DEADLINE_EXCEEDED:
        return tool_error(f"Timeout for tool {tool.name}: {details}")
    if code == Code.INVALID_ARGUMENT:
        return tool_error(f"Invalid arguments for tool {tool.name}: {details}")
    if code == Code.CANCELLED:
        return tool_error(f"Stream closed for tool {tool.name}")
    return tool_error(f"Failed to execute tool {tool.name}: {details}")
