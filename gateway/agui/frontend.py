"""The AG-UI front-end: ``POST /ag-ui/{agent}`` runs a network as an AG-UI agent.

The body is AG-UI's ``RunAgentInput`` (:mod:`gateway.agui.run_input`); the answer is a
``text/event-stream`` of AG-UI events (:mod:`gateway.agui.events`), written as they
happen. One run is one chat of the agents facade (MAXIMAL, with token deltas), so API
keys, OAuth, access rules, rate limits, request ids, metrics and logs are the service
layer's, as for every front-end; a private network is absent unless the caller's key
names it.

Before the stream starts, what the caller must fix is an HTTP error with a Status body,
as REST answers it: a body that is not a RunAgentInput (400), no or bad credentials
(401, with ``WWW-Authenticate``), a network the caller may not use (403) or that is not
there (404), a refusal for a while (429/503 with ``Retry-After``), the shared state
away (503). The first event of the chat is read before the response starts, so those
come with their real status. Anything after (the network failing, its deadline) ends
the run with ``RUN_ERROR``. A client that goes away cancels the chat.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web

from gateway.agents.interface import Answer, Caller, ChatEvent, ChatFailed, ChatStream, InvalidTurn, Turn
from gateway.agents.invoked import InvokedAgents
from gateway.agui.encoding import CONTENT_TYPE, encoded
from gateway.agui.events import RunTranslator, is_keepalive
from gateway.agui.run_input import BadRunInput, RunRequest, read_run_input
from gateway.agui.switch import AGUI_PATH
from gateway.agui.threads import ThreadStore, owner_of
from gateway.host.bearer import challenge
from gateway.host.errors import GatewayError, bad_request, encode_status, status_refusal
from gateway.host.frontends import FrontEndContext, FrontEndRoute
from gateway.host.json_body import MalformedJson, decode_json
from gateway.host.responses import HeadersWithFirstWrite, json_response
from gateway.state import StateUnavailable, process_state, release_state
from neuro_san.core.errors import Code

log = logging.getLogger(__name__)

#: Failures of the first event that are the caller's to fix: answered with their HTTP status.
_CALLER_CODES = frozenset({Code.UNAUTHENTICATED, Code.PERMISSION_DENIED, Code.NOT_FOUND, Code.INVALID_ARGUMENT})
#: An SSE comment: keeps a quiet stream open through proxies; AG-UI clients skip it.
_HEARTBEAT = b": keep-alive\n\n"
_STATE_AWAY = ("the shared state (AGENT_REDIS_URL) is unavailable, so the thread's conversation cannot be "
               "read; retry shortly")


class AguiFrontEnd:
    """Serves ``POST /ag-ui/{agent}``."""

    def __init__(self, context: FrontEndContext) -> None:
        self._context = context
        self._agents = InvokedAgents.of(context)
        self._threads = ThreadStore(process_state())

    def routes(self) -> Iterable[FrontEndRoute]:
        return [FrontEndRoute("POST", AGUI_PATH, "ag-ui", self.run, refusal=status_refusal)]

    async def close(self) -> None:
        await release_state()

    async def run(self, request: web.Request, captures: dict[str, str], raw: bytes) -> web.StreamResponse:
        agent = captures["agent"]
        try:
            run = read_run_input(decode_json(raw))
        except MalformedJson as error:
            return _refused(agent, bad_request(f"the body is not JSON: {error}", "body"))
        except BadRunInput as error:
            return _refused(agent, bad_request(str(error), error.field or "body"))
        if run.unsupported is not None:
            log.info("AG-UI run on %s refused: %s", agent, run.unsupported)
            return await _only_error(request, run, Code.INVALID_ARGUMENT.name, run.unsupported)
        owner = owner_of(request.headers)
        try:
            stored = await self._threads.get(owner, agent, run.thread_id)
        except StateUnavailable:
            return _refused(agent, GatewayError(Code.UNAVAILABLE, _STATE_AWAY, headers={"Retry-After": "1"}))
        turn = Turn({"type": "HUMAN", "text": run.text}, chat_context=stored, sly_data=run.sly_data,
                    chat_filter="MAXIMAL", stream_tokens=True, history=() if stored is not None else run.history,
                    agent_usage=False)
        try:
            stream = self._agents.chat(agent, turn, Caller(self._context.metadata(request)))
        except InvalidTurn as error:
            return _refused(agent, bad_request(str(error), _field_of(error)))
        async with stream:  # leaving (the client went away, an error) cancels the chat
            return await self._stream(request, agent, owner, run, stream)

    async def _stream(
        self, request: web.Request, agent: str, owner: str, run: RunRequest, stream: ChatStream
    ) -> web.StreamResponse:
        first: ChatEvent | None = await anext(stream, None)
        if isinstance(first, ChatFailed) and (first.code in _CALLER_CODES or first.is_refusal):
            failure = first.failure
            log.info("AG-UI run on %s refused (%d): %s", agent, failure.http_status, failure.message)
            headers = [*failure.headers(), *challenge(failure, request.path)]
            return json_response(failure.http_status, encode_status(failure.status_dict()), headers)
        response = await _open(request)
        translator = RunTranslator(run.thread_id, run.run_id, run.parent_run_id)
        # RUN_STARTED goes out with the first event's own (already read): one send, no wait.
        unsent = translator.started()
        try:
            event = first
            while event is not None:
                if isinstance(event, Answer) and event.chat_context:
                    # Kept before RUN_FINISHED is written: the client's next run may follow at once.
                    await self._keep(owner, agent, run.thread_id, event.chat_context)
                if isinstance(event, (Answer, ChatFailed)):
                    # The run's last events go out with the end of the body: one send.
                    await response.write_eof(encoded([*unsent, *translator.translate(event)]))
                    break
                data = encoded([*unsent, *translator.translate(event)])
                unsent = []
                if is_keepalive(event):
                    data += _HEARTBEAT
                if data:
                    await response.write(data)
                event = await self._next(stream, response)
            else:  # the chat ended without its answer: the run still ends as AG-UI says
                ended = translator.failed(Code.INTERNAL.name, "the chat ended without an answer")
                await response.write_eof(encoded([*unsent, *ended]))
        except ConnectionResetError:
            log.info("AG-UI client went away during a run on %s", agent)
        return response

    async def _next(self, stream: ChatStream, response: web.StreamResponse) -> ChatEvent | None:
        """The chat's next event; with ``keepalive_seconds`` (as REST's SSE), a comment on
        the stream each time it stays quiet that long."""
        heartbeat = self._context.config.keepalive_seconds
        if heartbeat <= 0:
            return await anext(stream, None)
        pending = asyncio.ensure_future(anext(stream, None))
        try:
            while not (await asyncio.wait({pending}, timeout=heartbeat))[0]:
                await response.write(_HEARTBEAT)
            return pending.result()
        finally:
            if not pending.done():  # the client went away while it waited: the chat stops too
                pending.cancel()

    async def _keep(self, owner: str, agent: str, thread_id: str, chat_context: Mapping[str, Any]) -> None:
        try:
            await self._threads.put(owner, agent, thread_id, chat_context)
        except StateUnavailable:
            # The answer is already the client's; its next run falls back to its messages.
            log.warning("AG-UI thread of %s not kept: the shared state is unavailable", agent)


async def _open(request: web.Request) -> web.StreamResponse:
    # The headers go out with the first write (RUN_STARTED and what follows it).
    response = HeadersWithFirstWrite(status=200, headers={
        "Content-Type": CONTENT_TYPE, "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
    })
    await response.prepare(request)
    return response


async def _only_error(request: web.Request, run: RunRequest, code: str, message: str) -> web.StreamResponse:
    """A run that is refused as AG-UI clients show it: ``RUN_STARTED`` then ``RUN_ERROR``."""
    response = await _open(request)
    translator = RunTranslator(run.thread_id, run.run_id, run.parent_run_id)
    try:
        await response.write_eof(encoded([*translator.started(), *translator.failed(code, message)]))
    except ConnectionResetError:
        pass
    return response


def _refused(agent: str, error: GatewayError) -> web.Response:
    log.info("AG-UI request on %s refused (%d): %s", agent, error.http_status, error.message)
    return status_refusal(error)


def _field_of(error: InvalidTurn) -> str:
    names: dict[str | None, str] = {"history": "messages", "sly_data": "state"}
    return names.get(error.field, error.field or "body")
