"""A blocking face on :class:`AsyncAgentClient`, for scripts and notebooks.

The async client runs on an event loop in one background thread per ``AgentClient``;
each call hands its coroutine to that loop and waits. Streaming calls are ordinary
generators: closing one early (``break``) cancels the call on the server.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping
from types import TracebackType
from typing import Any, TypeVar

from neuro_san.client.api import AsyncAgentClient, Conversation
from neuro_san.client.types import Connectivity, FunctionInfo
from neuro_san.core.messages import AgentInfo, ChatContext, ChatFilter, ChatMessage

T = TypeVar("T")


class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="neuro-san-client", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def iterate(self, stream: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self.run(_next(stream))
                except StopAsyncIteration:
                    return
        finally:
            self.run(stream.aclose())  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


async def _next(stream: AsyncIterator[T]) -> T:
    return await stream.__anext__()


class AgentClient:
    """The blocking client; same calls as :class:`AsyncAgentClient`. Close it when done."""

    def __init__(self, client: AsyncAgentClient) -> None:
        self._async = client
        self._loop = _LoopThread()

    @classmethod
    def grpc(cls, target: str, secure: bool = False, metadata: Mapping[str, str] | None = None) -> AgentClient:
        return cls(AsyncAgentClient.grpc(target, secure, metadata))

    @classmethod
    def http(cls, base_url: str, metadata: Mapping[str, str] | None = None) -> AgentClient:
        return cls(AsyncAgentClient.http(base_url, metadata))

    @classmethod
    def from_url(cls, url: str, metadata: Mapping[str, str] | None = None) -> AgentClient:
        return cls(AsyncAgentClient.from_url(url, metadata))

    @property
    def description(self) -> str:
        return self._async.description

    def list(self, timeout: float | None = None) -> list[AgentInfo]:
        return self._loop.run(self._async.list(timeout))

    def function(
        self, agent: str, metadata: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> FunctionInfo:
        return self._loop.run(self._async.function(agent, metadata, timeout))

    def connectivity(
        self, agent: str, metadata: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> Connectivity:
        return self._loop.run(self._async.connectivity(agent, metadata, timeout))

    def streaming_chat(
        self,
        agent: str,
        text: str,
        sly_data: Mapping[str, Any] | None = None,
        filter: ChatFilter = ChatFilter.MINIMAL,
        chat_context: ChatContext | None = None,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stream_tokens: bool | None = None,
    ) -> Iterator[ChatMessage]:
        stream = self._async.streaming_chat(
            agent, text, sly_data, filter, chat_context, metadata, timeout, stream_tokens
        )
        return self._loop.iterate(stream)

    def chat(self, agent: str, text: str, **options: Any) -> ChatMessage:
        return self._loop.run(self._async.chat(agent, text, **options))

    def conversation(
        self, agent: str, sly_data: Mapping[str, Any] | None = None, metadata: Mapping[str, str] | None = None
    ) -> SyncConversation:
        return SyncConversation(self._loop, self._async.conversation(agent, sly_data, metadata))

    def close(self) -> None:
        try:
            self._loop.run(self._async.close())
        finally:
            self._loop.stop()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class SyncConversation:
    """The blocking face of :class:`Conversation`."""

    def __init__(self, loop: _LoopThread, conversation: Conversation) -> None:
        self._loop = loop
        self.conversation = conversation

    @property
    def chat_context(self) -> ChatContext | None:
        return self.conversation.chat_context

    @property
    def sly_data(self) -> dict[str, Any]:
        return self.conversation.sly_data

    def send(self, text: str, sly_data: Mapping[str, Any] | None = None, timeout: float | None = None) -> ChatMessage:
        return self._loop.run(self.conversation.send(text, sly_data, timeout))

    def stream(
        self,
        text: str,
        filter: ChatFilter = ChatFilter.MAXIMAL,
        sly_data: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        stream_tokens: bool | None = None,
    ) -> Iterator[ChatMessage]:
        return self._loop.iterate(self.conversation.stream(text, filter, sly_data, timeout, stream_tokens))

    def reset(self) -> None:
        self.conversation.reset()
