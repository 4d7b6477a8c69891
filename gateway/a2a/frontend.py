"""The A2A front-end: each public network as an A2A agent on the HTTP port.

Routes (mounted through :mod:`gateway.host.frontends`):

- ``GET /.well-known/agent-card.json``: the server-wide card (a directory of networks);
- ``GET /a2a/{agent}/.well-known/agent-card.json`` (and the 0.3 name ``agent.json``);
- ``POST /a2a/{agent}``: the JSON-RPC binding (A2A 1.0 method names, and the 0.3 ones
  through the SDK's compatibility layer).

The JSON-RPC body is handled by the a2a-sdk's own dispatcher and request handler
(validation, error codes, task lifecycle, SSE), run through a small ASGI bridge
(:mod:`gateway.a2a.asgi_bridge`); the agents are reached only through the invoker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import grpc
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import VERSION_HEADER
from aiohttp import web
from neuro_san.api.grpc import agent_pb2, concierge_pb2
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.a2a.asgi_bridge import Receive, Scope, Send, call_asgi
from gateway.a2a.cards import card_to_json, network_card, server_card
from gateway.a2a.conversations import ConversationStore
from gateway.a2a.executor import AGENT_KEY, GRPC_METADATA_KEY, REFUSALS_KEY, NetworkExecutor
from gateway.a2a.routes import A2A_ROUTES
from gateway.a2a.tasks import OWNER_KEY, BoundedTaskStore, owner_of
from gateway.host.errors import RpcFailure, rpc_failure, status_from_rpc_error
from gateway.host.frontends import FrontEndContext, FrontEndRoute
from gateway.host.responses import dumps, json_response

#: Seconds a card lookup (Function / List) may take.
_LOOKUP_TIMEOUT = 10.0
_SCOPE_STATE = "neuro_san.state"


class _StateFromScope(DefaultServerCallContextBuilder):
    """The SDK's call state (headers: the A2A-Version check reads them) plus ours (agent,
    caller metadata, owner), which the front-end put in the ASGI scope."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state.update(request.scope.get(_SCOPE_STATE, {}))
        return context


def _api_keys_configured() -> bool:
    return bool(os.environ.get("AGENT_API_KEYS", "").strip() or os.environ.get("AGENT_API_KEYS_FILE", "").strip())


def _base_url(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def _jsonrpc_error(
    status: int, code: int, message: str, data: Any = None, headers: list[tuple[str, str]] | None = None
) -> web.Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    return json_response(status, body, headers)


def _refused(request_id: Any, failure: RpcFailure) -> JSONResponse:
    """A chat the service refused (rate limit, token budget: 429; busy: 503), answered as
    the REST gateway answers it: the HTTP status, ``Retry-After``, the service's message."""
    error = {"code": failure.jsonrpc_code, "message": failure.message, "data": failure.jsonrpc_data()}
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error},
                        status_code=failure.http_status, headers=dict(failure.headers()))


class A2AFrontEnd:
    """Serves the cards and the JSON-RPC binding; one task store and executor for all networks."""

    def __init__(self, context: FrontEndContext, conversations: ConversationStore | None = None) -> None:
        self.context = context
        self._function = context.method("AgentService", "Function")
        self._list = context.method("ConciergeService", "List")
        self.conversations = conversations or ConversationStore()
        self._secured = _api_keys_configured()
        executor = NetworkExecutor(
            context.method("AgentService", "StreamingChat"), self.conversations, context.config.max_timeout_seconds
        )
        self.handler = DefaultRequestHandler(
            agent_executor=executor,
            task_store=BoundedTaskStore(),
            # Only read for the extended card, which we do not offer; the real cards are per request.
            agent_card=server_card("http://localhost", [("neuro-san", "agent networks", [])], self._secured),
        )
        self._dispatcher = JsonRpcDispatcher(self.handler, _StateFromScope(), enable_v0_3_compat=True)

    def routes(self) -> Iterable[FrontEndRoute]:
        handlers = {"a2a_server_card": self.server_card, "a2a_agent_card": self.agent_card,
                     "a2a_agent_card_v03": self.agent_card, "a2a_jsonrpc": self.jsonrpc}
        return [FrontEndRoute(s.http_method, s.template, s.name, handlers[s.name], refusal=s.refusal,
                              takes_body=s.takes_body, drains=s.drains) for s in A2A_ROUTES]

    def _metadata(self, request: web.Request) -> list[tuple[str, Any]]:
        # A private network is not there over A2A unless the caller's key names it.
        return self.context.metadata(request, private_named_only=True)

    async def _description(self, request: web.Request, agent: str) -> str:
        """The network's description; raises AioRpcError (unknown network, no key…)."""
        metadata = [*self._metadata(request), ("agent-name", agent)]
        reply = await self._function(agent_pb2.FunctionRequest(), metadata=metadata, timeout=_LOOKUP_TIMEOUT)
        return str(reply.function.description)

    async def _describe(self, request: web.Request, agent: str) -> tuple[str, list[str]]:
        """The network's description and concierge tags."""
        description = await self._description(request, agent)
        tags: list[str] = []
        try:
            listing = await self._list(concierge_pb2.ConciergeRequest(), metadata=self._metadata(request),
                                       timeout=_LOOKUP_TIMEOUT)
            tags = next((list(a.tags) for a in listing.agents if a.agent_name == agent), [])
        except grpc.aio.AioRpcError:
            pass  # tags are a nicety; the Function call said the network is there
        return description, tags

    async def agent_card(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        agent = captures["agent"]
        try:
            description, tags = await self._describe(request, agent)
        except grpc.aio.AioRpcError as error:
            status, body = status_from_rpc_error(error)
            return json_response(status, dumps(body))
        card = network_card(_base_url(request), agent, description, tags, self._secured)
        return json_response(200, json.dumps(card_to_json(card)).encode())

    async def server_card(self, request: web.Request, _captures: dict[str, str], _body: bytes) -> (
        web.StreamResponse
    ):
        try:
            listing = await self._list(concierge_pb2.ConciergeRequest(), metadata=self._metadata(request),
                                       timeout=_LOOKUP_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            status, body = status_from_rpc_error(error)
            return json_response(status, dumps(body))
        agents = [(a.agent_name, a.description, list(a.tags)) for a in listing.agents]
        card = server_card(_base_url(request), agents, self._secured)
        return json_response(200, json.dumps(card_to_json(card)).encode())

    async def jsonrpc(self, request: web.Request, captures: dict[str, str], raw: bytes) -> web.StreamResponse:
        agent = captures["agent"]
        try:
            await self._description(request, agent)  # unknown network or missing key: say so now
        except grpc.aio.AioRpcError as error:
            failure = rpc_failure(error)
            code = failure.jsonrpc_code if failure.is_refusal else -32600
            return _jsonrpc_error(failure.http_status, code, failure.message, failure.status_dict(), failure.headers())
        try:  # the SDK reports bodies that are not UTF-8 as internal errors: say parse error
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            return _jsonrpc_error(200, -32700, f"Parse error: {error}")
        version = request.headers.get(VERSION_HEADER, "").strip()
        method = body.get("method") if isinstance(body, dict) else None
        if isinstance(method, str) and "/" in method and version and not version.startswith("0.3"):
            # A 0.3 method name with a newer A2A-Version: the SDK calls that an internal error.
            return _jsonrpc_error(200, -32600, f"method {method!r} is A2A 0.3 but {VERSION_HEADER} is {version!r}; "
                                  "send A2A 1.0 method names (SendMessage…) or no version header")
        refusals: list[RpcFailure] = []
        state = {
            REFUSALS_KEY: refusals,
            AGENT_KEY: agent,
            GRPC_METADATA_KEY: self._metadata(request),
            OWNER_KEY: f"{owner_of(request.headers)}:{agent}",  # tasks are per key and per network
        }

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            response = await self._dispatcher.handle_requests(Request(scope, receive))
            if refusals and isinstance(response, JSONResponse):
                # SendMessage waited for the task, which the service refused: nothing is sent
                # yet, so say it as REST does. A stream has started: its task failed with the message.
                response = _refused(body.get("id") if isinstance(body, dict) else None, refusals[-1])
            await response(scope, receive, send)

        return await call_asgi(app, request, raw, {_SCOPE_STATE: state})

    async def close(self) -> None:
        await self.handler.aclose()


def make_a2a_frontend(context: FrontEndContext) -> A2AFrontEnd:
    """The front-end factory for ``start_gateway(..., frontends=[...])``."""
    return A2AFrontEnd(context)



