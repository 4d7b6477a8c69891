"""The async client: one API over gRPC and the HTTP gateway.

::

    async with AsyncAgentClient.from_url("grpc://127.0.0.1:30011") as client:
        print(await client.list())
        async for message in client.streaming_chat("math_guy", "6 * 7", filter=MAXIMAL):
            print(message.type.name, message.text)
        conversation = client.conversation("echo")
        answer = await conversation.send("hello")       # carries chat_context by itself

A client shares one channel (gRPC) or one session (HTTP) between all its calls, so
make one and keep it. The transport modules are imported only when a client of that
kind is made: a gRPC-only program never imports aiohttp.
"""

# `timeout` is the call's deadline, handed to grpc/aiohttp, which enforce it natively (and
# asyncio.timeout would be wrong in the streaming generators): hence no ASYNC109.
# ruff: noqa: ASYNC109

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from neuro_san.client.errors import ServerError
from neuro_san.client.types import (
    Connectivity,
    FunctionInfo,
    agents_from_proto,
    build_request,
    connectivity_from_proto,
    function_from_proto,
    message_from_response,
    request_to_proto,
)
from neuro_san.core.messages import AgentInfo, ChatContext, ChatFilter, ChatMessage, ChatRequest, MessageType

if TYPE_CHECKING:
    from neuro_san.api.grpc import agent_pb2, concierge_pb2

DEFAULT_GRPC_PORT = 30011
DEFAULT_HTTP_PORT = 8080


class Transport(Protocol):
    """What a transport does; both return the protobuf messages of the API."""

    @property
    def description(self) -> str: ...

    async def list(self, timeout: float | None) -> concierge_pb2.ConciergeResponse: ...

    async def function(
        self, agent: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> agent_pb2.FunctionResponse: ...

    async def connectivity(
        self, agent: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> agent_pb2.ConnectivityResponse: ...

    def streaming_chat(
        self, agent: str, request: agent_pb2.ChatRequest, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> AsyncIterator[agent_pb2.ChatResponse]: ...

    async def close(self) -> None: ...


class AsyncAgentClient:
    """Calls the agents of one server. ``metadata`` goes with every call."""

    def __init__(self, transport: Transport, metadata: Mapping[str, str] | None = None) -> None:
        self.transport = transport
        self.metadata = dict(metadata or {})

    @classmethod
    def grpc(cls, target: str, secure: bool = False, metadata: Mapping[str, str] | None = None) -> AsyncAgentClient:
        """A client of the gRPC server at ``host:port``."""
        from neuro_san.client.grpc_transport import GrpcTransport

        return cls(GrpcTransport(target, secure), metadata)

    @classmethod
    def http(cls, base_url: str, metadata: Mapping[str, str] | None = None) -> AsyncAgentClient:
        """A client of the HTTP gateway at ``http(s)://host:port``."""
        from neuro_san.client.http_transport import HttpTransport

        return cls(HttpTransport(base_url), metadata)

    @classmethod
    def from_url(cls, url: str, metadata: Mapping[str, str] | None = None) -> AsyncAgentClient:
        """``grpc://host:port``, ``grpcs://…``, ``http://host:port``, ``https://…``; a bare
        ``host:port`` is gRPC. A missing port is the default of the scheme."""
        if "://" not in url:
            url = f"grpc://{url}"
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("grpc", "grpcs", "http", "https") or not parts.hostname:
            raise ValueError(f"not a server URL: {url!r} (use grpc://host:port or http://host:port)")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        if scheme.startswith("grpc"):
            return cls.grpc(f"{host}:{parts.port or DEFAULT_GRPC_PORT}", scheme == "grpcs", metadata)
        default = 443 if scheme == "https" else DEFAULT_HTTP_PORT
        return cls.http(f"{scheme}://{host}:{parts.port or default}", metadata)

    @property
    def description(self) -> str:
        """Where this client goes, for messages: ``grpc://host:port`` or the base URL."""
        return self.transport.description

    def _metadata(self, extra: Mapping[str, str] | None) -> dict[str, str] | None:
        if not extra:
            return self.metadata or None
        return {**self.metadata, **extra}

    async def list(self, timeout: float | None = None) -> list[AgentInfo]:
        """The public agent networks of the server (Concierge ``List``)."""
        return agents_from_proto(await self.transport.list(timeout))

    async def function(
        self, agent: str, metadata: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> FunctionInfo:
        return function_from_proto(await self.transport.function(agent, self._metadata(metadata), timeout))

    async def connectivity(
        self, agent: str, metadata: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> Connectivity:
        return connectivity_from_proto(await self.transport.connectivity(agent, self._metadata(metadata), timeout))

    async def streaming_chat(
        self,
        agent: str,
        text: str,
        sly_data: Mapping[str, Any] | None = None,
        filter: ChatFilter = ChatFilter.MINIMAL,
        chat_context: ChatContext | None = None,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stream_tokens: bool | None = None,
    ) -> AsyncIterator[ChatMessage]:
        """The messages of one turn as they arrive; the last is the AGENT_FRAMEWORK answer.
        With ``stream_tokens`` the LLM agents' TOKEN_DELTA messages come too (None: the
        network's default).

        Stopping the iteration early (``break``, ``aclose()``, cancelling the task)
        cancels the call, and with it the server's work for this request.
        """
        request = build_request(text, dict(sly_data or {}), filter, chat_context, stream_tokens)
        async for message in self.chat_request(agent, request, metadata, timeout):
            if message is not None:
                yield message

    async def chat_request(
        self,
        agent: str,
        request: ChatRequest,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[ChatMessage | None]:
        """A prepared request; ``None`` stands for an empty response (a request with no text)."""
        merged = {**request.metadata, **(metadata or {})}
        stream = self.transport.streaming_chat(agent, request_to_proto(request), self._metadata(merged), timeout)
        try:
            async for response in stream:
                yield message_from_response(response)
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    async def chat(self, agent: str, text: str, **options: Any) -> ChatMessage:
        """One turn; the final answer (the AGENT_FRAMEWORK message)."""
        return await _final(self.streaming_chat(agent, text, **options), agent)

    def conversation(
        self, agent: str, sly_data: Mapping[str, Any] | None = None, metadata: Mapping[str, str] | None = None
    ) -> Conversation:
        return Conversation(self, agent, sly_data, metadata)

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> AsyncAgentClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()


class Conversation:
    """A conversation with one agent; it carries ``chat_context`` from turn to turn.

    The server keeps no state between turns: each answer's ``chat_context`` goes with
    the next request. The sly_data the network returns is merged into ``sly_data``,
    which goes with every turn, as neuro-san's own client does.
    """

    def __init__(
        self,
        client: AsyncAgentClient,
        agent: str,
        sly_data: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.agent = agent
        self.sly_data: dict[str, Any] = dict(sly_data or {})
        self.metadata = dict(metadata or {})
        self.chat_context: ChatContext | None = None
        self.last_answer: ChatMessage | None = None

    async def stream(
        self,
        text: str,
        filter: ChatFilter = ChatFilter.MAXIMAL,
        sly_data: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        stream_tokens: bool | None = None,
    ) -> AsyncIterator[ChatMessage]:
        """One turn, message by message (all of them by default); then the context moves on."""
        outgoing = {**self.sly_data, **(sly_data or {})}
        stream = self.client.streaming_chat(
            self.agent, text, outgoing, filter, self.chat_context, self.metadata, timeout, stream_tokens
        )
        try:
            async for message in stream:
                if message.type is MessageType.AGENT_FRAMEWORK:
                    self._remember(message)
                yield message
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    async def send(
        self, text: str, sly_data: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> ChatMessage:
        """One turn; the final answer."""
        return await _final(self.stream(text, ChatFilter.MINIMAL, sly_data, timeout), self.agent)

    def reset(self) -> None:
        """Start over: forget the history (sly_data stays)."""
        self.chat_context = None
        self.last_answer = None

    def _remember(self, answer: ChatMessage) -> None:
        self.last_answer = answer
        if answer.chat_context is not None:
            self.chat_context = answer.chat_context
        if answer.sly_data:
            self.sly_data.update(answer.sly_data)


async def _final(messages: AsyncIterator[ChatMessage], agent: str) -> ChatMessage:
    answer: ChatMessage | None = None
    async for message in messages:
        if message.type is MessageType.AGENT_FRAMEWORK:
            answer = message
    if answer is None:
        raise ServerError(f"agent {agent!r} ended the turn without an answer", agent=agent)
    return answer
