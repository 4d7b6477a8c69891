"""The A2A front-end: each public network as an A2A agent on the HTTP port.

Routes (mounted through :mod:`gateway.host.frontends`):

- ``GET /.well-known/agent-card.json``: the server-wide card (a directory of networks);
- ``GET /a2a/{agent}/.well-known/agent-card.json`` (and the 0.3 name ``agent.json``);
- ``POST /a2a/{agent}``: the JSON-RPC binding (A2A 1.0 method names, and the 0.3 ones
  through the SDK's compatibility layer); ``POST /a2a``: the same, the network named by
  the request's ``tenant`` (the server-wide card's one interface);
- ``/a2a/{agent}/rest/...``: the HTTP+JSON binding (the SDK's REST routes);
- ``GET /.well-known/jwks.json``: the key of signed push notifications.

Inside ``neuro-san serve`` the same front-end (handler, task store, executor) also answers
A2A's gRPC binding on the gRPC port (:mod:`gateway.a2a.grpc_binding`), and the cards list it.

The bodies are handled by the a2a-sdk's own dispatchers and request handler (validation,
error codes, task lifecycle, SSE, push notifications), run through a small ASGI bridge
(:mod:`gateway.a2a.asgi_bridge`); the agents are reached only through the agents facade
(:mod:`gateway.agents`: cards from its directory, tasks as its chats). Tasks,
their events, push configurations and contextIds live in the shared state
(:mod:`gateway.state`): Redis with ``AGENT_REDIS_URL``, so any replica answers any request.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, cast

from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.routes.rest_dispatcher import RestDispatcher
from a2a.server.routes.rest_routes import create_rest_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, PushNotificationConfigStore
from a2a.types import Task, TaskStatusUpdateEvent
from a2a.utils.constants import VERSION_HEADER
from aiohttp import web
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Router

from gateway.a2a.answers import jsonrpc_error, refused_chat, rest_replacement
from gateway.a2a.asgi_bridge import (
    AsgiApp,
    Receive,
    Scope,
    Send,
    call_asgi,
    malformed_rest_body,
    quiet_sdk_refusals,
    sdk_request,
    whole_response,
)
from gateway.a2a.card_http import CardPlace, CardSettings, card_place, card_response
from gateway.a2a.cards import CardSecurity, OAuthCard, card_to_json, network_card, server_card
from gateway.a2a.executor import NetworkExecutor, call_state
from gateway.a2a.outage import jsonrpc_answer, met, noting_outages, quiet_sdk_reports, rest_answer
from gateway.a2a.push import RedisPushConfigStore, RetryingPushSender, check_url
from gateway.a2a.push_policy import PushUrlPolicy, allowed_networks
from gateway.a2a.push_signing import signer_from_env
from gateway.a2a.routes import A2A_MEDIA_TYPE, A2A_ROUTES, REST_PREFIX, a2a_typed
from gateway.a2a.tasks import BoundedTaskStore, owner_of, resolve_owner
from gateway.agents.interface import AgentsFailed, Caller
from gateway.agents.invoked import InvokedAgents
from gateway.host.bearer import authorization_server, challenge, oauth_settings
from gateway.host.errors import RpcFailure
from gateway.host.frontends import FrontEndContext, FrontEndRoute
from gateway.host.json_body import MalformedJson, decode_json
from gateway.host.responses import dumps, json_response
from gateway.state import StateSettings, process_state, release_state
from gateway.state.conversations import ConversationStore
from neuro_san.core.access import DEFAULT_SCOPE
from neuro_san.core.errors import echo
from neuro_san.settings import process_env

if TYPE_CHECKING:
    from gateway.a2a.redis_tasks import RedisTaskStore
    from gateway.state.redis_state import RedisState

#: Seconds a card lookup (Function / List) may take.
_LOOKUP_TIMEOUT = 10.0
_SCOPE_STATE = "neuro_san.state"
#: The streaming method, by its A2A 1.0 and 0.3 names: its answer streams token by token.
_STREAMING_METHODS = frozenset({"SendStreamingMessage", "message/stream"})
#: The HTTP+JSON binding's ``SendMessage``, below ``/a2a/<network>/rest``.
_REST_SEND = "/message:send"


class _StateFromScope(DefaultServerCallContextBuilder):
    """The SDK's call state (headers: the A2A-Version check reads them) plus ours (agent,
    caller metadata, owner), which the front-end put in the ASGI scope."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state.update(request.scope.get(_SCOPE_STATE, {}))
        return context


def _api_keys_configured() -> bool:
    return bool(process_env().get("AGENT_API_KEYS", "").strip() or process_env().get("AGENT_API_KEYS_FILE", "").strip())


def _has_credentials(request: web.Request) -> bool:
    return bool(request.headers.get("Authorization") or request.headers.get("X-Api-Key"))


async def _card_security(api_keys: bool) -> CardSecurity:
    """The schemes the cards declare: API keys when configured, OAuth2 with an issuer (its
    endpoints from its metadata; left out while that cannot be fetched)."""
    settings = oauth_settings()
    if settings is None:
        return CardSecurity(api_keys=api_keys)
    found = await authorization_server(settings)
    if found is None:
        return CardSecurity(api_keys=api_keys)
    url, document = found
    authorize, token = document.get("authorization_endpoint"), document.get("token_endpoint")
    if not isinstance(authorize, str) or not isinstance(token, str):
        return CardSecurity(api_keys=api_keys)
    oauth = OAuthCard(url, authorize, token, {DEFAULT_SCOPE: "call every public agent network"})
    return CardSecurity(api_keys=api_keys, oauth=oauth)


_A2A_TYPE = A2A_MEDIA_TYPE.encode()


@noting_outages
class _Handler(DefaultRequestHandler):
    """The SDK's handler, and a push notification for a cancel written here for a task that
    runs on another replica (whose own consumer sees it as a version conflict, not an event).
    ``_cancel_remote`` is the SDK's own (private) step for exactly that case; the scale-out
    test's webhook fails if a new SDK renames it. Its methods note a Redis outage met during
    a call in the call's state, for the bindings to answer it (:mod:`gateway.a2a.outage`)."""

    async def _cancel_remote(self, task_id: str, task: Task, version: TaskVersion,
                             context: ServerCallContext) -> Task:
        cancelled: Task = await super()._cancel_remote(task_id, task, version, context)
        if self._push_sender is not None:
            await self._push_sender.send_notification(task_id, TaskStatusUpdateEvent(
                task_id=task_id, context_id=cancelled.context_id, status=cancelled.status))
        return cancelled


class A2AFrontEnd:
    """Serves the cards and the JSON-RPC binding; one task store and executor for all networks.
    ``grpc_port``: the gRPC port where A2A's gRPC binding is served (0: not served here)."""

    def __init__(
        self, context: FrontEndContext, conversations: ConversationStore | None = None, grpc_port: int = 0
    ) -> None:
        self.context = context
        self.grpc_port = grpc_port
        self.agents = InvokedAgents.of(context, lookup_seconds=_LOOKUP_TIMEOUT)
        self.state = process_state()
        self.conversations = conversations or ConversationStore(self.state)
        self._secured = _api_keys_configured()
        self.card_settings = CardSettings.from_env()  # checked at start by protocol_frontends
        self.tasks: RedisTaskStore | None = None
        quiet_sdk_reports()
        quiet_sdk_refusals()
        if self.state.shared:  # AGENT_REDIS_URL: tasks and their events on Redis
            from gateway.a2a.redis_tasks import RedisTaskStore  # imports redis: only when configured

            self.tasks = RedisTaskStore(cast("RedisState", self.state))
            self.tasks.start()
        policy = PushUrlPolicy(allowed_networks())
        settings = StateSettings.from_env()
        push_store: PushNotificationConfigStore = (
            RedisPushConfigStore(cast("RedisState", self.state), settings.task_ttl_seconds) if self.state.shared
            else InMemoryPushNotificationConfigStore(owner_resolver=resolve_owner))
        self.signer = signer_from_env()
        self.push = RetryingPushSender(push_store, policy, signer=self.signer)
        executor = NetworkExecutor(self.agents, self.conversations, self.state, self.tasks)
        if self.tasks is not None:
            self.tasks.push_sender = self.push
        self.handler = _Handler(
            agent_executor=executor,
            task_store=self.tasks or BoundedTaskStore(),
            # Only read for the extended card, which we do not offer; the real cards are per request.
            agent_card=server_card("http://localhost", [("neuro-san", "agent networks", [])],
                                   CardSecurity(api_keys=self._secured)),
            event_stream=self.tasks,
            push_config_store=push_store,
            push_sender=self.push,
            push_url_validator=functools.partial(check_url, policy),
        )
        self._dispatcher = JsonRpcDispatcher(self.handler, _StateFromScope(), enable_v0_3_compat=True)
        self._rest = Router(routes=create_rest_routes(self.handler, _StateFromScope()))
        # The binding's common call, which the SDK answers whole, reached without its router.
        self._rest_send = RestDispatcher(self.handler, _StateFromScope()).on_message_send

    def routes(self) -> Iterable[FrontEndRoute]:
        handlers = {"a2a_server_card": self.server_card, "a2a_agent_card": self.agent_card,
                    "a2a_agent_card_v03": self.agent_card, "a2a_jsonrpc": self.jsonrpc,
                    "a2a_jsonrpc_tenant": self.jsonrpc_by_tenant, "a2a_rest": self.rest, "a2a_jwks": self.jwks}
        return [FrontEndRoute(s.http_method, s.template, s.name, handlers[s.name], refusal=s.refusal,
                              takes_body=s.takes_body, drains=s.drains) for s in A2A_ROUTES]

    def _caller(self, request: web.Request) -> Caller:
        # A private network is not there over A2A unless the caller's key names it (Caller's default).
        return Caller(self.context.metadata(request))

    def _card_caller(self, request: web.Request) -> Caller:
        """Cards are served without credentials (they say how to authenticate): without
        any, the service answers from the public directory (public networks only); with
        some, as for every call (a private network its key or token names is shown)."""
        return Caller(self.context.metadata(request), public_directory=not _has_credentials(request))

    async def check_network(self, agent: str, caller: Caller) -> str:
        """The network's description, asked as ``caller``; raises AgentsFailed (unknown
        network, no key…). Every binding asks it first: a clear refusal up front."""
        return (await self.agents.describe(agent, caller)).description

    def _place(self, request: web.Request) -> CardPlace:
        """Where the cards say we are: never a Host that is not a plain host[:port] (400)."""
        return card_place(request, self.card_settings, self.grpc_port)

    async def _describe(self, request: web.Request, agent: str) -> tuple[str, list[str]]:
        """The network's description and concierge tags: from the directory's listing (one
        call); a network it lacks is asked for, so that the refusal is the service's own."""
        caller = self._card_caller(request)
        listed = next((a for a in await self.agents.list(caller) if a.name == agent), None)
        if listed is None or listed.function is None:
            return await self.check_network(agent, caller), list(listed.tags) if listed else []
        return listed.function.description, list(listed.tags)

    async def agent_card(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        agent = captures["agent"]
        place = self._place(request)
        try:
            description, tags = await self._describe(request, agent)
        except AgentsFailed as error:
            return json_response(error.failure.http_status, dumps(error.failure.status_dict()))
        card = network_card(place.base, agent, description, tags, await _card_security(self._secured), place.grpc)
        return card_response(request, json.dumps(card_to_json(card)).encode(), place, self.card_settings)

    async def server_card(self, request: web.Request, _captures: dict[str, str], _body: bytes) -> (
        web.StreamResponse
    ):
        place = self._place(request)
        try:
            listing = await self.agents.list(self._card_caller(request))
        except AgentsFailed as error:
            return json_response(error.failure.http_status, dumps(error.failure.status_dict()))
        agents = [(a.name, a.description, list(a.tags)) for a in listing]
        card = server_card(place.base, agents, await _card_security(self._secured), place.grpc)
        return card_response(request, json.dumps(card_to_json(card)).encode(), place, self.card_settings)

    async def jwks(self, _request: web.Request, _captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        if self.signer is None:
            return json_response(404, dumps({"code": 5, "message": "push notifications are not signed here "
                                             "(no AGENT_A2A_PUSH_SIGNING_KEY_FILE)", "details": []}))
        return json_response(200, json.dumps(self.signer.jwks()).encode())

    async def jsonrpc_by_tenant(self, request: web.Request, _captures: dict[str, str], raw: bytes) -> (
        web.StreamResponse
    ):
        """``POST /a2a``: JSON-RPC for the network the request names in ``params.tenant``."""
        try:
            body = decode_json(raw)
        except MalformedJson as error:
            return jsonrpc_error(200, -32700, f"Parse error: {error}")
        params = body.get("params") if isinstance(body, dict) else None
        tenant = params.get("tenant") if isinstance(params, dict) else None
        if not isinstance(tenant, str) or not tenant.strip("/"):
            # Relative paths: an error must not echo the request's Host either.
            return jsonrpc_error(200, -32602, "name the agent network in params.tenant (the skills of "
                                 "/.well-known/agent-card.json), or use the network's own "
                                 "card at /a2a/<network>/.well-known/agent-card.json")
        return await self.jsonrpc(request, {"agent": tenant.strip("/")}, raw)

    async def rest(self, request: web.Request, captures: dict[str, str], raw: bytes) -> web.StreamResponse:
        """The HTTP+JSON binding: the a2a-sdk's REST routes, below ``/a2a/<network>/rest``."""
        agent = captures["agent"]
        if not await self.state.available():  # tasks live in Redis, which is away: say so, quickly
            status, body, headers = rest_answer()
            return a2a_typed(json_response(status, dumps(body), list(headers.items())))
        try:
            await self.check_network(agent, self._caller(request))
        except AgentsFailed as error:
            return a2a_typed(json_response(error.failure.http_status, dumps(error.failure.status_dict())))
        if (malformed := malformed_rest_body(raw)) is not None:  # before the SDK's own parse
            return a2a_typed(malformed)
        path = request.path.split(f"{agent}{REST_PREFIX}", 1)[-1]
        refusals: list[RpcFailure] = []
        state = self._call_state(request, agent, refusals, streaming=path.endswith(":stream"))
        extra = {_SCOPE_STATE: state, "path": path, "raw_path": path.encode()}
        if request.method == "POST" and path == _REST_SEND:  # the common call, answered whole: no ASGI round trip
            response = await self._rest_send(sdk_request(request, raw, extra))
            if (instead := rest_replacement(refusals, state)) is not None:
                status, body, named = instead
                return a2a_typed(json_response(status, dumps(body), list(named.items())))
            return a2a_typed(whole_response(response))
        return await call_asgi(self._rest_refusing(refusals, state), request, raw, extra)

    def _rest_refusing(self, refusals: list[RpcFailure], state: dict[str, Any]) -> AsgiApp:
        """The SDK's REST router; a call that met a Redis outage is answered as one that found
        it at its start; a ``message:send`` the service refused (limits, busy server) with the
        refusal's HTTP status, Status body and Retry-After, as the REST API answers it (a
        stream has started by then: its task fails with the message)."""
        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            replaced = False

            async def send_or_refuse(message: MutableMapping[str, Any]) -> None:
                nonlocal replaced
                instead = rest_replacement(refusals, state) if message["type"] == "http.response.start" else None
                if instead is not None:
                    status, body, named = instead
                    replaced = True
                    headers = [(b"content-type", _A2A_TYPE),
                               *((name.lower().encode(), value.encode()) for name, value in named.items())]
                    await send({"type": "http.response.start", "status": status, "headers": headers})
                    await send({"type": "http.response.body", "body": dumps(body)})
                elif not replaced:
                    if message["type"] == "http.response.start":  # the SDK types its errors JSON
                        message["headers"] = [(name, _A2A_TYPE if name.lower() == b"content-type" and
                                               value.split(b";")[0].strip() == b"application/json" else value)
                                              for name, value in message.get("headers", ())]
                    await send(message)

            await self._rest(scope, receive, send_or_refuse)

        return app

    def _call_state(
        self, request: web.Request, agent: str, refusals: list[RpcFailure], streaming: bool = False
    ) -> dict[str, Any]:
        """``streaming``: a streaming method, whose answer streams as artifact chunks."""
        return call_state(agent, self.context.metadata(request), owner_of(request.headers), refusals, streaming)

    async def jsonrpc(self, request: web.Request, captures: dict[str, str], raw: bytes) -> web.StreamResponse:
        agent = captures["agent"]
        if not await self.state.available():  # tasks live in Redis, which is away: say so, quickly
            status, answer, headers = jsonrpc_answer(None)  # the body is not read yet
            return json_response(status, dumps(answer), list(headers.items()))
        try:
            await self.check_network(agent, self._caller(request))  # unknown network or missing key: say so now
        except AgentsFailed as error:
            failure = error.failure
            code = failure.jsonrpc_code if failure.is_refusal else -32600
            return jsonrpc_error(failure.http_status, code, failure.message, failure.status_dict(),
                                 failure.headers() + challenge(failure))
        try:  # the SDK parses the body again: only one that passed the host's decoder reaches it
            body = decode_json(raw)
        except MalformedJson as error:
            return jsonrpc_error(200, -32700, f"Parse error: {error}")
        version = request.headers.get(VERSION_HEADER, "").strip()
        method = body.get("method") if isinstance(body, dict) else None
        if isinstance(method, str) and "/" in method and version and not version.startswith("0.3"):
            # A 0.3 method name with a newer A2A-Version: the SDK calls that an internal error.
            return jsonrpc_error(200, -32600, f"method {echo(method)} is A2A 0.3 but {VERSION_HEADER} is "
                                 f"{echo(version)}; send A2A 1.0 method names (SendMessage…) or no version header")
        refusals: list[RpcFailure] = []
        state = self._call_state(request, agent, refusals, streaming=method in _STREAMING_METHODS)

        extra = {_SCOPE_STATE: state}
        response = await self._dispatcher.handle_requests(sdk_request(request, raw, extra))
        if not isinstance(response, JSONResponse):  # a stream: its SSE frames as the SDK writes them
            return await call_asgi(response, request, raw, extra)
        outage = met(state)
        if outage is not None:
            # Redis went away during this request (the SDK said "internal error"): nothing
            # is sent yet, so answer as for a request that found it away, 503. A stream has
            # started: it ended with an error event saying so.
            status, answer, headers = jsonrpc_answer(body.get("id") if isinstance(body, dict) else None, outage)
            return json_response(status, dumps(answer), list(headers.items()))
        if refusals:
            # SendMessage waited for the task, which the service refused: nothing is sent
            # yet, so say it as REST does. A stream has started: its task failed with the message.
            return refused_chat(body.get("id") if isinstance(body, dict) else None, refusals[-1])
        return whole_response(response)

    async def close(self) -> None:
        await self.handler.aclose()
        await self.push.close()
        if self.tasks is not None:
            await self.tasks.close()
        await release_state()


def make_a2a_frontend(context: FrontEndContext) -> A2AFrontEnd:
    """The front-end factory for ``start_gateway(..., frontends=[...])``."""
    return A2AFrontEnd(context)
