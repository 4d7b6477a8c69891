"""The OpenAI-compatible API at ``/v1``: every network a model for OpenAI's clients.

A front-end of the HTTP port (:mod:`gateway.host.frontends`): the host matches the
routes, guards them and reads their bodies; this room decodes a body with the one JSON
decoder (:mod:`gateway.host.json_body`), reaches agents only through the agents facade
(:mod:`gateway.agents`) and answers in OpenAI's shapes, errors included. Credentials are
the service's own: ``Authorization: Bearer`` carries an API key or OAuth token as on
every route, and becomes metadata through ``FrontEndContext.metadata``. Private networks
are models only for a key or token that names them (the protocol front-ends' rule).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web

from gateway.agents.interface import AgentsFailed, Caller
from gateway.agents.invoked import InvokedAgents
from gateway.host.frontends import FrontEndContext, FrontEndRoute
from gateway.host.json_body import MalformedJson, decode_json
from gateway.host.responses import dumps, json_response
from gateway.openai.chat import chat_completions
from gateway.openai.errors import OpenAiError, answered, from_agents_failed, model_not_found, openai_refusal
from gateway.openai.params import require_object
from gateway.openai.responses import NAMESPACE, ResponsesApi
from gateway.openai.shapes import model_object
from gateway.openai.switch import OPENAI_PREFIX
from gateway.state import process_state, release_state
from gateway.state.conversations import ConversationStore

Handler = Callable[[web.Request, dict[str, str], bytes], Awaitable[web.StreamResponse]]

#: (method, path under /v1, metrics name) of every route.
OPENAI_PATHS = (
    ("GET", "/models", "openai_models"),
    ("GET", "/models/{model}", "openai_model"),
    ("POST", "/chat/completions", "openai_chat_completions"),
    ("POST", "/responses", "openai_responses"),
    ("GET", "/responses/{response_id}", "openai_response"),
    ("DELETE", "/responses/{response_id}", "openai_response_delete"),
)


class OpenAiFrontEnd:
    def __init__(self, context: FrontEndContext) -> None:
        self._context = context
        #: Made on the first request, as the other front-ends' (a host built for a test of
        #: its table may lack the directory's method).
        self._agents_made: InvokedAgents | None = None
        self._heartbeat = context.config.keepalive_seconds
        #: Made on the first /v1/responses request: the shared state is taken (and, with
        #: Redis, connected) only by a server whose clients use it, as A2A's and MCP's.
        self._responses_api: ResponsesApi | None = None
        #: A model's ``created``: networks carry no creation time, so the server's start.
        self._created = int(time.time())

    def routes(self) -> Iterable[FrontEndRoute]:
        handlers: dict[str, Handler] = {
            "openai_models": self._models, "openai_model": self._model,
            "openai_chat_completions": self._chat, "openai_responses": self._create_response,
            "openai_response": self._get_response, "openai_response_delete": self._delete_response,
        }
        return [FrontEndRoute(method, OPENAI_PREFIX + path, name, _guarded(handlers[name]), refusal=openai_refusal)
                for method, path, name in OPENAI_PATHS]

    async def close(self) -> None:
        if self._responses_api is not None:
            await release_state()

    @property
    def _agents(self) -> InvokedAgents:
        if self._agents_made is None:
            self._agents_made = InvokedAgents.of(self._context)
        return self._agents_made

    @property
    def _responses(self) -> ResponsesApi:
        if self._responses_api is None:
            store = ConversationStore(process_state(), namespace=NAMESPACE)
            self._responses_api = ResponsesApi(self._agents, store, self._heartbeat)
        return self._responses_api

    def _caller(self, request: web.Request) -> Caller:
        return Caller(self._context.metadata(request))

    async def _visible(self, request: web.Request) -> list[str]:
        try:
            return [summary.name for summary in await self._agents.list(self._caller(request))]
        except AgentsFailed as error:
            raise from_agents_failed(error) from None

    async def _models(self, request: web.Request, _captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        models = [model_object(name, self._created) for name in await self._visible(request)]
        return json_response(200, dumps({"object": "list", "data": models}))

    async def _model(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        name = captures["model"]
        if name not in await self._visible(request):
            raise model_not_found(name)
        return json_response(200, dumps(model_object(name, self._created)))

    async def _chat(self, request: web.Request, _captures: dict[str, str], body: bytes) -> web.StreamResponse:
        return await chat_completions(request, _decoded(body), self._agents, self._caller(request), self._heartbeat)

    async def _create_response(
        self, request: web.Request, _captures: dict[str, str], body: bytes
    ) -> web.StreamResponse:
        return await self._responses.create(request, _decoded(body), self._caller(request))

    async def _get_response(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        return await self._responses.get(request, captures["response_id"])

    async def _delete_response(
        self, request: web.Request, captures: dict[str, str], _body: bytes
    ) -> web.StreamResponse:
        return await self._responses.delete(request, captures["response_id"])


def _decoded(body: bytes) -> dict[str, Any]:
    try:
        return require_object(decode_json(body))
    except MalformedJson as error:
        raise OpenAiError(400, str(error), code="invalid_json") from None


def _guarded(handler: Handler) -> Handler:
    """``handler`` with its :class:`OpenAiError` answered in OpenAI's shape (and logged once)."""

    async def guarded(request: web.Request, captures: dict[str, str], body: bytes) -> web.StreamResponse:
        try:
            return await handler(request, captures, body)
        except OpenAiError as error:
            return answered(request, error)

    return guarded


def make_frontend(context: FrontEndContext) -> OpenAiFrontEnd:
    return OpenAiFrontEnd(context)
