"""``NetworkRunner``: the AgentApi that serves networks from a NetworkSource."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from neuro_san.core.errors import AgentNotFound, RequestTimeout
from neuro_san.core.messages import (
    AgentInfo,
    ChatContext,
    ChatMessage,
    ChatRequest,
    ConnectivityEntry,
    MessageType,
)
from neuro_san.core.telemetry import NO_TELEMETRY, Telemetry
from neuro_san.llm.byok import take_llm_keys
from neuro_san.llm.interface import ModelFactory
from neuro_san.llm.structure import extract_json_object
from neuro_san.middleware.chain import rewritten_context
from neuro_san.network.connectivity import connectivity_tools, reported_as_agent
from neuro_san.network.served_as_mcp import tool_names
from neuro_san.network.spec import NetworkSource, NetworkSpec, is_external_ref
from neuro_san.network.upstream_keys import invocation_kind
from neuro_san.reservations.store import ReservationStore
from neuro_san.runtime.agent_loop import run_llm_agent
from neuro_san.runtime.coded_tools import CodedToolResolver
from neuro_san.runtime.context import Journal, RequestContext, TokenScope
from neuro_san.runtime.external import ExternalAgents, RemoteFactory
from neuro_san.runtime.history import (
    next_context,
    refuse_client_history,
    restore_client_history,
    restore_history,
    to_llm_messages,
)
from neuro_san.runtime.mcp_server_tools import McpClients
from neuro_san.runtime.signing import ContextSigner
from neuro_san.runtime.tool_binding import AgentToolBinder
from neuro_san.runtime.transcript import front_man_transcript
from neuro_san.runtime.usage_report import request_usage
from neuro_san.settings import process_env

_DONE = object()
log = logging.getLogger(__name__)


class NetworkRunner:
    """Serves the networks of ``source``. One instance per server, shared by all calls.

    ``keepalive_seconds`` > 0 makes a quiet stream send an empty AGENT_PROGRESS message
    after that many seconds without output, so proxies do not cut long requests.
    """

    def __init__(
        self,
        source: NetworkSource,
        models: ModelFactory,
        coded_tools: CodedToolResolver,
        remote: RemoteFactory | None = None,
        keepalive_seconds: float = 0.0,
        signer: ContextSigner | None = None,
        telemetry: Telemetry = NO_TELEMETRY,
        mcp: McpClients | None = None,
        max_tokens_per_request: int = 0,
    ) -> None:
        self._source = source
        #: The default cap when a network sets no max_tokens_per_request (0: none).
        self.max_tokens_per_request = max_tokens_per_request
        self._models = models
        self._coded_tools = coded_tools
        self._tools = AgentToolBinder(ExternalAgents(self, remote), mcp or McpClients.from_env(process_env()))
        self._keepalive = keepalive_seconds
        self._signer = signer
        self._telemetry = telemetry
        self._mcp_tools_cache: tuple[Mapping[str, NetworkSpec], dict[str, str]] | None = None
        #: Temporary networks (reservations), found after the source's networks.
        self.reservations = ReservationStore(source)
        #: Work of event invocations still running (kept so it is not garbage collected).
        self._events: set[asyncio.Task[ChatMessage]] = set()

    async def aclose(self) -> None:
        """Close what requests share beyond the runner's life (MCP sessions)."""
        await self._tools.mcp.aclose()

    def _event_done(self, task: asyncio.Task[ChatMessage]) -> None:
        self._events.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("event work of %s failed: %s", task.get_name(), type(task.exception()).__name__)

    def _find(self, agent: str) -> NetworkSpec | None:
        return self._source.get(agent) or self.reservations.get(agent)

    def _network(self, agent: str) -> NetworkSpec:
        network = self._find(agent)
        if network is None:
            raise AgentNotFound(agent)
        return network

    def has_agent(self, agent: str) -> bool:
        return self._find(agent) is not None

    def is_public(self, agent: str) -> bool:
        network = self._source.get(agent)
        return network is None or network.public

    def function(self, agent: str) -> Mapping[str, Any]:
        return self._network(agent).front.function

    def connectivity(self, agent: str) -> tuple[list[ConnectivityEntry], Mapping[str, Any] | None]:
        network = self._network(agent)
        entries: list[ConnectivityEntry] = []
        # Depth first, each node before its tools and the tools in written order, as
        # neuro-san lists them (a UI draws the tree in this order); each node once.
        pending = [network.front_man]
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            if is_external_ref(name):
                if reported_as_agent(name):
                    entries.append(ConnectivityEntry(name, (), "external_agent"))
                continue
            node = network.agents.get(name)
            if node is None:  # an args.tools name that is no agent: listed, not reported
                continue
            tools = connectivity_tools(node) if node.allow.connectivity else ()
            entries.append(
                ConnectivityEntry(name, tuple(tools), node.display_as or node.kind, node.metadata)
            )
            pending.extend(reversed([tool for tool in tools if tool not in seen]))
        return entries, network.metadata

    def list_agents(self, include_private: bool = False) -> list[AgentInfo]:
        infos = []
        networks = self._source.networks()
        mcp_tools = self._mcp_tool_names(networks)
        for name, network in sorted(networks.items()):
            if not network.public and not include_private:
                continue
            meta = network.metadata or {}
            tags = meta.get("tags") or ()
            infos.append(
                AgentInfo(
                    agent_name=name,
                    description=str(meta.get("description", "")),
                    tags=tuple(str(t) for t in tags) if isinstance(tags, (list, tuple)) else (),
                    public=network.public,
                    mcp_tool=mcp_tools.get(name),
                )
            )
        return infos

    def _mcp_tool_names(self, networks: Mapping[str, NetworkSpec]) -> dict[str, str]:
        # Resolved once per set of networks (a reload publishes a new mapping), so a name
        # collision is logged once, not on every listing.
        cached = self._mcp_tools_cache
        if cached is None or cached[0] is not networks:
            names = tool_names((name, network.mcp) for name, network in networks.items())
            cached = (networks, names)
            self._mcp_tools_cache = cached
        return cached[1]

    async def chat(self, agent: str, request: ChatRequest) -> AsyncIterator[ChatMessage | None]:
        """See ``AgentApi.chat``."""
        network = self._network(agent)
        if not request.user_text:
            yield None
            return
        streaming = request.chat_filter.is_maximal
        stream_tokens = network.stream_tokens if request.stream_tokens is None else request.stream_tokens
        event = not streaming and invocation_kind(network.front.function) == "event"
        # An event invocation is acknowledged at once: nobody is left to read its deltas.
        tokens: TokenScope = ("all" if streaming else "front") if stream_tokens and not event else "none"
        sly_data = request.sly_data
        llm_keys = take_llm_keys([a.llm_config for a in network.agents.values()], sly_data)
        if request.metadata and "request_metadata" not in sly_data:
            sly_data["request_metadata"] = dict(request.metadata)
        ctx = RequestContext(
            network=network,
            sly_data=sly_data,
            journal=Journal(streaming, tokens, request.echo_inputs, request.agent_usage),
            models=self._models,
            coded_tools=self._coded_tools,
            tools=self._tools,
            metadata=request.metadata,
            telemetry=self._telemetry,
            llm_keys=llm_keys,
            reservations=self.reservations,
            max_tokens=network.max_tokens_per_request or self.max_tokens_per_request,
            on_usage=request.on_usage,
        )
        if event:
            # neuro-san's event invocation: acknowledge at once, do the work in the background.
            task = asyncio.create_task(self._run(ctx, request))
            self._events.add(task)
            task.add_done_callback(self._event_done)
            yield ChatMessage(type=MessageType.AGENT_FRAMEWORK, text="Event acknowledged", chat_context=ChatContext())
            return
        if not streaming and tokens == "none" and self._keepalive <= 0:
            yield await self._run(ctx, request)
            return
        async for message in self._stream(ctx, request):
            yield message

    async def _stream(self, ctx: RequestContext, request: ChatRequest) -> AsyncIterator[ChatMessage]:
        queue: asyncio.Queue[Any] = ctx.journal.queue or asyncio.Queue()
        outcome: list[Any] = []

        async def run() -> None:
            try:
                outcome.append(await self._run(ctx, request))
            except BaseException as error:  # handed to the consumer below
                outcome.append(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
            finally:
                queue.put_nowait(_DONE)

        task = asyncio.create_task(run())
        try:
            while True:
                if self._keepalive > 0:
                    try:
                        item = await asyncio.wait_for(queue.get(), self._keepalive)
                    except TimeoutError:
                        yield ChatMessage(type=MessageType.AGENT_PROGRESS)
                        continue
                else:
                    item = await queue.get()
                if item is _DONE:
                    break
                yield item
            result = outcome[0]
            if isinstance(result, BaseException):
                raise result
            yield result
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _run(self, ctx: RequestContext, request: ChatRequest) -> ChatMessage:
        network = ctx.network
        budgets = [b for b in (network.max_execution_seconds, network.request_timeout_seconds) if b > 0]
        try:
            async with asyncio.timeout(min(budgets) if budgets else None):
                return await self._turn(ctx, request)
        except TimeoutError as error:
            raise RequestTimeout(
                f"the request ran out of time after {min(budgets):g} s "
                "(max_execution_seconds / request_timeout_seconds)"
            ) from error
        finally:
            await close_resources(ctx.sly_data)

    async def _turn(self, ctx: RequestContext, request: ChatRequest) -> ChatMessage:
        network = ctx.network
        front = network.front
        origin = ctx.instantiate((), front.name)
        incoming = request.chat_context
        if request.client_history:
            # The client owns its history (our OpenAI / AG-UI front-end said so): nothing to verify.
            prior = restore_client_history(incoming)
        else:
            refuse_client_history(incoming)
            if self._signer is not None and incoming is not None and incoming.chat_histories:
                incoming = self._signer.verify(incoming)
            prior = restore_history(incoming, front.name)
        with request_usage() as usage, front_man_transcript(origin) as transcript:
            answer = await run_llm_agent(
                ctx, front, origin, request.user_text, to_llm_messages(prior), announce_instructions=not prior
            )
        if not usage.nested and ctx.journal.streaming:
            # The main network's, then the request's total (alone, without agent usage).
            for report in usage.reports(main_network=ctx.journal.agent_usage):
                ctx.emit(MessageType.AGENT, origin, structure=report)
        text, structure = answer, None
        if "json" in front.structure_formats:
            structure, text = extract_json_object(answer)
        sly_out = front.allow.to_upstream.apply(ctx.sly_data)
        context = rewritten_context(ctx, origin, answer, front.max_message_history) or next_context(
            prior, origin, request.user_text, answer, front.max_message_history, transcript.tool_results
        )
        if self._signer is not None:
            context = self._signer.sign(context)
        return ChatMessage(
            type=MessageType.AGENT_FRAMEWORK,
            text=text,
            structure=structure,
            chat_context=context,
            sly_data=sly_out or None,
        )


async def close_resources(sly_data: dict[str, Any]) -> None:
    """Close what coded tools left in sly_data (clients, files…), as neuro-san does: any
    value with a ``close()``, sync or async, once the request is over, however it ended.
    A failing close is logged (by type only: sly_data stays out of the log)."""
    for key, value in list(sly_data.items()):
        if isinstance(value, (str, bytes, int, float, bool, list, dict, type(None))):
            continue
        close = getattr(value, "close", None)
        if not callable(close):
            continue
        try:
            result = close()
            if inspect.isawaitable(result):
                await result
        except Exception as error:  # one bad resource must not hide the answer
            log.warning("closing sly_data[%r] failed: %s", key, type(error).__name__)
