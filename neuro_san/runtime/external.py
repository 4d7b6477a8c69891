"""Calling other agent networks as tools: ``/name`` here, or a remote server.

``/name`` runs in-process through the local AgentApi (no network hop, no port guessing).
``http(s)://host:port/name`` and ``grpc://host:port/name`` go through a
:class:`RemoteAgent` made by the ``remote`` factory (the client library supplies one).
``a2a+http(s)://…`` names an A2A agent (:mod:`neuro_san.runtime.a2a_agents`).

Only the sly_data keys allowed by the caller's ``allow.to_downstream`` go out, and only
those allowed by ``allow.from_downstream`` come back. The called network's messages
reach the client only when ``allow.from_downstream.messages`` says so; they are
re-rooted under the external node's origin, keeping the called front man (see
``journal_shapes`` for the node's own messages). Calls to other servers carry the trace context
(``traceparent``) in their metadata when tracing is on; ``/name`` calls need none, their
spans simply nest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from neuro_san.core.errors import AgentNotFound, ConfigurationError, UpstreamUnavailable
from neuro_san.core.messages import ChatFilter, ChatMessage, ChatRequest, MessageType, OriginPath
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.a2a_agents import A2AAgent, is_a2a_ref
from neuro_san.runtime.arguments import a2a_input_text, network_input_text
from neuro_san.runtime.journal_shapes import got_result, received_arguments

if TYPE_CHECKING:
    from neuro_san.core.agent_api import AgentApi
    from neuro_san.runtime.context import RequestContext


class RemoteAgent(Protocol):
    """A network on another server."""

    async def function(self) -> Mapping[str, Any]: ...

    def chat(self, request: ChatRequest) -> AsyncIterator[ChatMessage | None]: ...


RemoteFactory = Callable[[str], RemoteAgent]


class ExternalAgents:
    """Resolves and calls external agent references; shared by all requests."""

    def __init__(self, agents: AgentApi, remote: RemoteFactory | None = None) -> None:
        self._agents = agents
        self._remote = remote
        self._remotes: dict[str, RemoteAgent] = {}

    def _remote_agent(self, ref: str) -> RemoteAgent:
        agent = self._remotes.get(ref)
        if agent is None and is_a2a_ref(ref):  # a2a+http(s)://…: the A2A client
            agent = self._remotes[ref] = A2AAgent(ref)
        if agent is None:
            if self._remote is None:
                raise ConfigurationError(f"external agent {ref!r}: remote agents are not enabled")
            agent = self._remotes[ref] = self._remote(ref)
        return agent

    async def function(self, ref: str) -> Mapping[str, Any]:
        if ref.startswith("/"):
            try:
                return self._agents.function(ref[1:])
            except AgentNotFound:
                return {}
        try:
            return await self._remote_agent(ref).function()
        except UpstreamUnavailable:
            return {}

    def _chat(self, ref: str, request: ChatRequest) -> AsyncIterator[ChatMessage | None]:
        if ref.startswith("/"):
            if not self._agents.has_agent(ref[1:]):
                raise UpstreamUnavailable(f"external agent {ref!r} is not served here")
            return self._agents.chat(ref[1:], request)
        return self._remote_agent(ref).chat(request)

    async def call(
        self,
        ctx: RequestContext,
        caller: AgentSpec,
        origin: OriginPath,
        ref: str,
        arguments: Mapping[str, Any],
    ) -> str:
        forward = caller.allow.from_downstream_messages and ctx.journal.streaming
        metadata = dict(ctx.metadata)
        if not ref.startswith("/"):
            ctx.telemetry.inject(metadata)  # trace context (traceparent) for the other server
        ctx.emit(MessageType.AGENT, origin, "Received arguments:", structure=received_arguments(arguments))
        request = ChatRequest(
            user_text=a2a_input_text(arguments) if is_a2a_ref(ref) else network_input_text(arguments),
            sly_data=caller.allow.to_downstream.apply(ctx.sly_data),
            chat_filter=ChatFilter.MAXIMAL if forward else ChatFilter.MINIMAL,
            metadata=metadata,
            # A called network's token deltas reach nobody: not asked of a network of this
            # server (whatever its default); a remote one's are dropped below. (Nothing is
            # sent to a remote server, which may be a neuro-san that knows no such field.)
            stream_tokens=False if ref.startswith("/") else None,
            # What this request's journal leaves out, a called network of this server does
            # not make (the journal drops a remote one's SYSTEM and HUMAN messages).
            echo_inputs=not ctx.journal.left_out,
            agent_usage=ctx.journal.agent_usage,
        )
        answer: ChatMessage | None = None
        async for message in self._chat(ref, request):
            if message is None:
                continue
            if message.type is MessageType.AGENT_FRAMEWORK:
                answer = message
            elif forward and message.type is not MessageType.TOKEN_DELTA:
                # Under the external node, the called network's origins keep its front man.
                message.origin = (*origin, *message.origin)
                if message.tool_result_origin:
                    message.tool_result_origin = (*origin, *message.tool_result_origin)
                ctx.journal.emit(message)
        if answer is None:
            raise UpstreamUnavailable(f"external agent {ref!r} ended without an answer")
        if answer.sly_data:
            ctx.sly_data.update(caller.allow.from_downstream.apply(answer.sly_data))
        ctx.emit(MessageType.AGENT, origin, "Got result:", structure=got_result(answer.text))
        return answer.text
