"""One gRPC call served in this process: a servicer context and a grpc.aio-like call.

:class:`gateway.invokers.inprocess.InProcessInvoker` runs a method handler of the service layer
(the very ``grpc.RpcMethodHandler`` the gRPC server serves) as its own task, as grpc.aio
does, with a :class:`LocalContext` in place of the server's context. The gateway and the
front-ends see a :class:`LocalUnaryCall` / :class:`LocalStreamCall` that behaves like the
grpc.aio call objects they use: awaitable unary result, ``read()`` / ``async for`` with
``grpc.aio.EOF``, ``initial_metadata()``, ``trailing_metadata()``, ``code()``,
``details()``, ``done()``, ``cancel()``, and failures raised as ``grpc.aio.AioRpcError``
with the code, details and trailing metadata the handler aborted with.

What a channel would do is done here too, without the bytes: the request and each
response are checked against the message size limit (``RESOURCE_EXHAUSTED``, as grpc
says it), the deadline (``timeout``) cancels the handler and fails the call with
``DEADLINE_EXCEEDED``, and ``cancel()`` cancels the handler's task, which cancels its
LLM calls as a cancelled RPC does.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from typing import Any

import grpc
from google.protobuf.message import Message

from neuro_san.core.internal_metadata import IN_PROCESS_PEER

log = logging.getLogger(__name__)

MetadataPairs = Sequence[tuple[str, Any]]
_EMPTY = grpc.aio.Metadata()


def as_metadata(pairs: MetadataPairs | None) -> grpc.aio.Metadata:
    return grpc.aio.Metadata(*pairs) if pairs else _EMPTY


class _Aborted(grpc.aio.AbortError):
    """Raised by :meth:`LocalContext.abort`, as grpc.aio's context raises AbortError."""


class LocalContext:
    """The part of ``grpc.aio.ServicerContext`` a servicer may use, for a local call."""

    def __init__(self, metadata: MetadataPairs, deadline: float | None, loop: asyncio.AbstractEventLoop) -> None:
        self._metadata = tuple(metadata)
        self._deadline = deadline
        self._loop = loop
        self.initial: asyncio.Future[grpc.aio.Metadata] = loop.create_future()
        self.trailing: MetadataPairs = ()
        self.code: grpc.StatusCode | None = None
        self.details: str = ""
        self.is_cancelled = False

    def invocation_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._metadata

    async def send_initial_metadata(self, metadata: MetadataPairs) -> None:
        if self.initial.done():
            raise grpc.aio.UsageError("initial metadata was already sent")
        self.initial.set_result(as_metadata(metadata))

    def set_trailing_metadata(self, metadata: MetadataPairs) -> None:
        self.trailing = tuple(metadata)

    def trailing_metadata(self) -> MetadataPairs:
        return self.trailing

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: MetadataPairs = ()) -> None:
        if code == grpc.StatusCode.OK:
            raise grpc.aio.UsageError("abort() needs an error code, not OK")
        self.code, self.details = code, details
        if trailing_metadata:
            self.trailing = tuple(trailing_metadata)
        raise _Aborted()

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def time_remaining(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - self._loop.time())

    def cancelled(self) -> bool:
        return self.is_cancelled

    def peer(self) -> str:
        return IN_PROCESS_PEER  # the one peer whose internal metadata the service trusts

    def peer_identities(self) -> None:
        return None

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    def send_initial_metadata_if_needed(self) -> None:
        if not self.initial.done():
            self.initial.set_result(_EMPTY)


def size_error(size: int, limit: int, *, sending: bool) -> tuple[grpc.StatusCode, str]:
    verb = "Sent" if sending else "Received"
    return grpc.StatusCode.RESOURCE_EXHAUSTED, f"{verb} message larger than max ({size} vs. {limit})"


class _LocalCallBase:
    """The task running the handler, the deadline, and the final status."""

    def __init__(self, context: LocalContext, timeout: float | None) -> None:
        self._context = context
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[Any] | None = None
        self._status: tuple[grpc.StatusCode, str] | None = None
        self._done_callbacks: list[Callable[[Any], None]] = []
        self._deadline_timer = (
            self._loop.call_later(max(0.0, timeout), self._deadline_passed) if timeout is not None else None
        )

    def _start(self, coroutine: Any) -> None:
        # A context of its own, as grpc.aio gives each RPC: what the handler sets in
        # contextvars (the log's request id, the trace span) stays inside the call.
        self._task = self._loop.create_task(coroutine, context=contextvars.copy_context())
        self._task.add_done_callback(self._handler_done)

    def _handler_done(self, task: asyncio.Task[Any]) -> None:
        error = None if task.cancelled() else task.exception()  # always retrieved
        if self._status is None:
            if task.cancelled():
                self._finish(grpc.StatusCode.CANCELLED, "Cancelled")
            elif error is None:
                self._finish(self._context.code or grpc.StatusCode.OK, self._context.details)
            elif isinstance(error, grpc.aio.AbortError):
                self._finish(self._context.code or grpc.StatusCode.UNKNOWN, self._context.details)
            else:  # what grpc.aio does with a handler's stray exception
                log.error("unexpected error in an in-process call", exc_info=error)
                self._finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(error)}: {error}")

    def _deadline_passed(self) -> None:
        self._abandon(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")

    def _abandon(self, code: grpc.StatusCode, details: str) -> bool:
        if self._status is not None:
            return False
        self._context.is_cancelled = True
        self._finish(code, details)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        return True

    def _finish(self, code: grpc.StatusCode, details: str) -> None:
        self._status = (code, details)
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._context.send_initial_metadata_if_needed()
        self._finished()
        for callback in self._done_callbacks:
            callback(self)

    def _finished(self) -> None:
        """Wake whoever waits on the call (subclasses)."""

    def _error(self) -> grpc.aio.AioRpcError:
        assert self._status is not None
        code, details = self._status
        initial = self._context.initial.result() if self._context.initial.done() else _EMPTY
        return grpc.aio.AioRpcError(code, initial, as_metadata(self._context.trailing), details)

    def shut_down(self) -> bool:
        """End the call as a stopping server ends the calls left after its grace period."""
        return self._abandon(grpc.StatusCode.UNAVAILABLE, "the server shut down before the call finished")

    # The grpc.aio.Call surface.
    def cancel(self) -> bool:
        return self._abandon(grpc.StatusCode.CANCELLED, "Locally cancelled by application!")

    def cancelled(self) -> bool:
        return self._status is not None and self._status[0] == grpc.StatusCode.CANCELLED

    def done(self) -> bool:
        return self._status is not None

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        if self._status is not None:
            callback(self)
        else:
            self._done_callbacks.append(callback)

    def time_remaining(self) -> float | None:
        return self._context.time_remaining()

    async def initial_metadata(self) -> grpc.aio.Metadata:
        return await asyncio.shield(self._context.initial)

    async def trailing_metadata(self) -> grpc.aio.Metadata:
        await self._wait_done()
        return as_metadata(self._context.trailing)

    async def code(self) -> grpc.StatusCode:
        await self._wait_done()
        assert self._status is not None
        return self._status[0]

    async def details(self) -> str:
        await self._wait_done()
        assert self._status is not None
        return self._status[1]

    async def wait_for_connection(self) -> None:
        return None

    async def _wait_done(self) -> None:
        if self._status is None:
            waiter: asyncio.Future[None] = self._loop.create_future()

            def wake(_call: Any) -> None:
                if not waiter.done():
                    waiter.set_result(None)

            self.add_done_callback(wake)
            try:
                await waiter
            except asyncio.CancelledError:
                # As grpc.aio: a caller cancelled while it waits for the call cancels the
                # call (and so the handler's task, its chat and its LLM requests).
                self.cancel()
                raise


class LocalUnaryCall(_LocalCallBase):
    """``await call`` → the response, or AioRpcError."""

    def __init__(
        self, behaviour: Callable[..., Any], request: Message, context: LocalContext, timeout: float | None,
        limit: int,
    ) -> None:  # fmt: skip
        super().__init__(context, timeout)
        self._limit = limit
        self._response: Any = None
        self._start(self._run(behaviour, request))

    async def _run(self, behaviour: Callable[..., Any], request: Message) -> None:
        response = behaviour(request, self._context)
        if inspect.isawaitable(response):
            response = await response
        if self._context.code not in (None, grpc.StatusCode.OK):
            return  # the handler set an error code and returned: that status stands
        size = response.ByteSize() if response is not None else 0
        if size > self._limit:
            self._abandon(*size_error(size, self._limit, sending=False))
            return
        self._response = response

    def __await__(self) -> Generator[Any, None, Any]:
        yield from self._wait_done().__await__()
        assert self._status is not None
        if self._status[0] != grpc.StatusCode.OK:
            raise self._error()
        return self._response


class LocalStreamCall(_LocalCallBase):
    """``read()`` → the next response or ``grpc.aio.EOF``; ``async for`` over the responses."""

    def __init__(
        self, behaviour: Callable[..., Any], request: Message, context: LocalContext, timeout: float | None,
        limit: int,
    ) -> None:  # fmt: skip
        super().__init__(context, timeout)
        self._limit = limit
        self._ready: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None
        #: Set while the consumer is behind (a small window, as HTTP/2 flow control gives).
        self._room: asyncio.Future[None] | None = None
        self._start(self._run(behaviour, request))

    async def _run(self, behaviour: Callable[..., Any], request: Message) -> None:
        responses = behaviour(request, self._context)
        if not hasattr(responses, "__aiter__"):
            raise TypeError("an in-process stream handler must be an async generator")
        try:
            async for response in responses:
                size = response.ByteSize()
                if size > self._limit:
                    self._abandon(*size_error(size, self._limit, sending=False))
                    return
                self._context.send_initial_metadata_if_needed()
                self._ready.append(response)
                self._wake()
                while len(self._ready) >= _WINDOW and self._status is None:
                    self._room = self._loop.create_future()
                    await self._room
        finally:
            aclose = getattr(responses, "aclose", None)
            if aclose is not None:
                await aclose()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _finished(self) -> None:
        self._wake()

    async def read(self) -> Any:
        while not self._ready:
            if self._status is not None:
                if self._status[0] == grpc.StatusCode.OK:
                    return grpc.aio.EOF
                raise self._error()
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            except asyncio.CancelledError:
                # As grpc.aio: a reader cancelled mid-read cancels the call, so a front-end
                # whose task is cancelled (A2A tasks/cancel) stops the chat and its LLM calls.
                self.cancel()
                raise
        response = self._ready.popleft()
        if self._room is not None and not self._room.done():
            self._room.set_result(None)
        return response

    def at_eof(self) -> Any:
        """``grpc.aio.EOF`` when the stream has ended well with nothing left to read, else
        None; never waits (not part of grpc.aio: lets the gateway end a response in one write)."""
        if not self._ready and self._status is not None and self._status[0] == grpc.StatusCode.OK:
            return grpc.aio.EOF
        return None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        while True:
            response = await self.read()
            if response is grpc.aio.EOF:
                return
            yield response


#: Responses a stream may run ahead of its reader before its handler waits.
_WINDOW = 16
