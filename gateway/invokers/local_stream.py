"""The in-process server-streaming call, run by the task that reads it (issue 37).

grpc.aio runs a stream handler in a task of its own, which a reader's ``read()`` waits on.
A copy of that design here cost every message one more task hop than the transport's own
(the handler's task woke on the chat's next token, queued the message, woke the reader),
about a tenth of a streamed token's CPU. :class:`LocalStreamCall` instead steps the
handler's async iterator *in the task that reads it*: ``read()`` runs the handler's
``__anext__`` by hand, handing whatever the handler awaits up to the reader's task, each
piece of the handler run inside the call's own :mod:`contextvars` context (so what the
handler sets there, the log's request id or the trace span, stays in the call, as it did
in a task of its own). What that task gave is kept:

- the handler starts at once, before anybody reads: a task runs it to its first message,
  and runs it ahead (up to :data:`_WINDOW` messages, as HTTP/2 flow control lets a server
  run ahead) while something waits for the call's end without reading (``code()``, a
  draining server);
- after each message it is stepped on at once to its next wait, so the call knows when
  that message was its last (``at_eof``: the end of a response goes out with it);
- the deadline, ``cancel()`` and a server shutdown end the call and throw
  ``CancelledError`` into the handler where it waits, whichever task is running it; a
  handler stopped between messages is closed (``aclose``) in a task of the call's own;
- a reader cancelled mid-read cancels the call, as with grpc.aio.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import types
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

import grpc
from google.protobuf.message import Message

from gateway.invokers.local_call import LocalContext, _LocalCallBase, size_error

log = logging.getLogger(__name__)

#: Responses a stream may run ahead of its reader while its end is awaited unread.
_WINDOW = 16
#: What a step that has not run yet waits on.
_FRESH: Any = object()


class _Step:
    """One awaitable of the handler (its ``__anext__``, its ``aclose``) run by hand: each
    piece in ``context``, while the task that awaits :meth:`finish` waits on what it waits on."""

    __slots__ = ("_context", "_pieces", "waiting_on", "done", "result", "error", "_cancelling")

    def __init__(self, context: contextvars.Context, awaitable: Awaitable[Any]) -> None:
        self._context = context
        self._pieces = awaitable.__await__()
        self.waiting_on: Any = _FRESH
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        #: 0: not asked to stop; 1: asked, the CancelledError not yet thrown in; 2: thrown.
        self._cancelling = 0

    def resume(self, error: BaseException | None = None) -> None:
        """Run it on to its next wait (then in ``waiting_on``) or its end."""
        try:
            if error is None:
                self.waiting_on = self._context.run(self._pieces.send, None)
            else:
                self.waiting_on = self._context.run(self._pieces.throw, error)
            return
        except StopIteration as stop:
            self.result = stop.value
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as failure:  # StopAsyncIteration and CancelledError included
            self.error = failure
        self.done = True

    @property
    def reader_cancelled(self) -> bool:
        """It ended in a CancelledError that :meth:`cancel` did not throw in."""
        return self._cancelling == 0 and isinstance(self.error, asyncio.CancelledError)

    def cancel(self) -> None:
        """As ``Task.cancel``: what it waits on is cancelled, CancelledError goes in where it waits."""
        if self._cancelling == 0:
            self._cancelling = 1
            waiting = self.waiting_on
            if asyncio.isfuture(waiting) and not waiting.done():
                waiting.cancel()  # wakes whichever task awaits the step

    @types.coroutine
    def finish(self) -> Generator[Any, Any, None]:
        """Await the step to its end in the awaiting task (what a Task does with a coroutine)."""
        while not self.done:
            error: BaseException | None = None
            if self.waiting_on is not _FRESH and self._cancelling != 1:
                try:
                    yield self.waiting_on  # the awaiting task waits on it and wakes us
                except GeneratorExit:
                    raise
                except BaseException as caught:  # the future failed, or the awaiting task was cancelled
                    # Handed in as a Task would: code of the handler may cancel its own task
                    # and catch it (anyio's cancel scopes do), so only a CancelledError that
                    # comes out of the step means the awaiting task itself was cancelled.
                    error = caught
            if self._cancelling == 1:
                self._cancelling = 2
                if not isinstance(error, asyncio.CancelledError):
                    error = asyncio.CancelledError()
            self.resume(error)


class LocalStreamCall(_LocalCallBase):
    """``read()`` → the next response or ``grpc.aio.EOF``; ``async for`` over the responses."""

    def __init__(
        self, behaviour: Callable[..., Any], request: Message, context: LocalContext, timeout: float | None,
        limit: int,
    ) -> None:  # fmt: skip
        super().__init__(context, timeout)
        self._limit = limit
        self._behaviour, self._request = behaviour, request
        #: The call's own context, as grpc.aio gives each RPC: every step of the handler runs in it.
        self._call_context = contextvars.copy_context()
        self._responses: Any = None  # the handler's async iterator, once started
        self._step: _Step | None = None  # the handler's step under way (or stopped mid-wait)
        self._exhausted = False  # the handler has ended (or was closed)
        #: The task stepping the handler now (the first message's, a run-ahead, a reader, the closer).
        self._driver: asyncio.Future[Any] | None = None
        self._ready: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._run_ahead(1)

    # ---- stepping the handler --------------------------------------------------------------
    def _next_step(self) -> _Step | None:
        if self._step is None:
            if self._responses is None:
                responses = self._call_context.run(self._behaviour, self._request, self._context)
                if not hasattr(responses, "__aiter__"):
                    self._ended(TypeError("an in-process stream handler must be an async generator"))
                    return None
                self._responses = responses.__aiter__()
            self._step = _Step(self._call_context, self._responses.__anext__())
        return self._step

    async def _advance(self) -> None:
        """Run the handler, in this task, to its next message or its end."""
        step = self._next_step()
        if step is None:
            return
        await step.finish()
        if step.reader_cancelled:
            # As grpc.aio: a reader cancelled mid-read (a front-end's task cancelled, A2A
            # tasks/cancel) cancels the call, so the chat and its LLM calls stop.
            self._step = None
            self.cancel()
            self._settle(step)
            raise asyncio.CancelledError()
        self._settle(step)

    def _settle(self, step: _Step) -> None:
        self._step = None
        error = step.error
        if error is None:
            self._took(step.result)
        elif isinstance(error, StopAsyncIteration):
            self._ended(None)
        else:
            self._ended(error)

    def _took(self, response: Any) -> None:
        if self._status is not None:
            return  # a handler that carried on after its call ended: nobody reads it
        size = response.ByteSize()
        if size > self._limit:
            self._abandon(*size_error(size, self._limit, sending=False))
            return
        self._context.send_initial_metadata_if_needed()
        self._ready.append(response)
        self._wake()

    def _ended(self, error: BaseException | None) -> None:
        self._exhausted = True
        if self._status is not None:
            return
        if error is None:
            self._finish(self._context.code or grpc.StatusCode.OK, self._context.details)
        elif isinstance(error, grpc.aio.AbortError):
            self._finish(self._context.code or grpc.StatusCode.UNKNOWN, self._context.details)
        elif isinstance(error, asyncio.CancelledError):
            self._finish(grpc.StatusCode.CANCELLED, "Cancelled")
        else:  # what grpc.aio does with a handler's stray exception
            log.error("unexpected error in an in-process call", exc_info=error)
            self._finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(error)}: {error}")

    def _look_ahead(self) -> None:
        """Step the handler on at once, to its next wait: if the message just read was its
        last, the call knows it now (``at_eof``); a message it has at hand is taken too."""
        if self._driver is not None or self._status is not None or self._exhausted or self._step is not None:
            return
        step = self._next_step()
        if step is not None:
            step.resume()
            if step.done:
                self._settle(step)

    def _run_ahead(self, messages: int) -> None:
        if self._driver is None and self._status is None and not self._exhausted:
            self._driver = self._loop.create_task(self._pump(messages))

    async def _pump(self, messages: int) -> None:
        try:
            while self._status is None and not self._exhausted and len(self._ready) < messages:
                await self._advance()
        finally:
            self._driver = None
            self._driven()

    def _driven(self) -> None:
        """After a task stopped stepping the handler: close it if its call has ended."""
        self._wake()
        if self._status is not None and not self._exhausted and self._driver is None:
            self._driver = self._loop.create_task(self._close())

    async def _close(self) -> None:
        try:
            if self._step is not None:
                await self._advance()  # its cancellation goes in where it waits
            aclose = getattr(self._responses, "aclose", None)
            if aclose is not None and not self._exhausted:
                closing = _Step(self._call_context, aclose())
                await closing.finish()
                if closing.error is not None:
                    log.error("closing an in-process stream handler failed", exc_info=closing.error)
        except asyncio.CancelledError:
            pass  # the loop is going away
        finally:
            self._exhausted = True

    def _abandon(self, code: grpc.StatusCode, details: str) -> bool:
        if self._status is not None:
            return False
        self._context.is_cancelled = True
        self._finish(code, details)
        if self._step is not None:
            self._step.cancel()
        if self._driver is None:
            self._driven()
        return True

    async def _wait_done(self) -> None:
        # Waiting for the end without reading: run ahead, as a gRPC server sends into its
        # flow-control window, so a short stream ends (a draining server waits for it).
        self._run_ahead(_WINDOW)
        await super()._wait_done()

    # ---- the reader's side -----------------------------------------------------------------
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
            if self._driver is None:
                self._driver = asyncio.current_task()
                try:
                    await self._advance()
                finally:
                    self._driver = None
                    self._driven()
                continue
            self._waiter = self._loop.create_future()  # another task is stepping the handler
            try:
                await self._waiter
            except asyncio.CancelledError:
                self.cancel()  # as a reader cancelled mid-read, above
                raise
        response = self._ready.popleft()
        if not self._ready:
            self._look_ahead()
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
