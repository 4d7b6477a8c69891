"""A deadline on a gRPC call's request message: a call whose message never arrives ends.

gRPC core starts a call when its HEADERS arrive and, for a unary request (every method
of ours but reflection's), hands it to the handler only once its one message has come;
until then nothing bounds it but a deadline the client itself chose. A client that sends
HEADERS and no DATA (answering the server's keepalive pings) so holds a call, and its
stream on the connection, for ever. gRPC core has no server option for this.

So the server's unary-request handlers are served as stream-request ones (the same bytes
on the wire: gRPC's framing does not say how many messages a method takes) whose first
read is bounded by ``seconds``; past it the call ends with ``DEADLINE_EXCEEDED`` and one
log line. The message then goes to the very handler as before. A streaming-request method
(reflection) gets the same deadline on its first message only: pauses between its
messages are its to have. Only the gRPC server gets this interceptor; the gateway's
in-process calls have no wire to wait on. Sync handlers (run in gRPC's thread pool) are
left as they are: ours are all async. A client that ends its call without a message gets
``INVALID_ARGUMENT``. ``AGENT_GRPC_REQUEST_TIMEOUT_SECONDS=0`` installs no interceptor.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeAlias

import grpc

log = logging.getLogger(__name__)

SETTING = "AGENT_GRPC_REQUEST_TIMEOUT_SECONDS"

Context: TypeAlias = grpc.aio.ServicerContext

_NO_MESSAGE = object()


class RequestMessageDeadline(grpc.aio.ServerInterceptor):
    """Ends a unary-request call whose request message has not arrived in ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        # One wrapped handler per handler object: the handlers are made once, at start-up.
        self._wrapped: dict[int, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        known = self._wrapped.get(id(handler))  # first: this runs on every call, _is_async is slower
        if known is not None and known[0] is handler:
            return known[1]
        # A sync handler runs in grpc's thread pool: left as it is (and remembered as such).
        wrapped = self._wrap(handler, handler_call_details.method) if _is_async(handler) else handler
        if len(self._wrapped) < _CACHE_LIMIT:
            self._wrapped[id(handler)] = (handler, wrapped)
        return wrapped

    def _wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        if handler.request_streaming:
            return self._wrap_streaming_request(handler, method)
        receive = self._receive
        if handler.response_streaming:
            behaviour = handler.unary_stream
            if inspect.isasyncgenfunction(behaviour):

                async def streamed(requests: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
                    request = await receive(context, method)
                    if request is not _NO_MESSAGE:
                        async for response in behaviour(request, context):
                            yield response

                return grpc.stream_stream_rpc_method_handler(
                    streamed, handler.request_deserializer, handler.response_serializer
                )

            async def written(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> None:
                request = await receive(context, method)  # a handler writing with context.write()
                if request is not _NO_MESSAGE:
                    await behaviour(request, context)

            return grpc.stream_stream_rpc_method_handler(
                written, handler.request_deserializer, handler.response_serializer
            )
        unary = handler.unary_unary

        async def answered(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            request = await receive(context, method)
            return None if request is _NO_MESSAGE else await unary(request, context)

        return grpc.stream_unary_rpc_method_handler(answered, handler.request_deserializer, handler.response_serializer)

    async def _receive(self, context: grpc.aio.ServicerContext, method: str) -> Any:
        """The one request message, or _NO_MESSAGE once the call has been ended without it.
        This runs on every call, so: a plain timer rather than ``asyncio.timeout``, and the
        context's own ``read`` rather than the request iterator (grpc's async generator over
        that same ``read``, one more layer for one message)."""
        timer = asyncio.get_running_loop().call_later(self.seconds, self._no_message, context, method)
        try:
            request = await context.read()
        finally:
            timer.cancel()
        if request is grpc.aio.EOF:
            if not context.done():
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the call ended without its request message")
            return _NO_MESSAGE
        return request

    def _no_message(self, context: grpc.aio.ServicerContext, method: str) -> None:
        log.info(
            "ended a call to %s from %s: its request message did not arrive in %g s (%s)",
            method, context.peer(), self.seconds, SETTING,
        )
        # The status ends the call, and so the read waiting for the message (it sees none).
        aborting = asyncio.ensure_future(_abort(context, self.seconds))
        _ABORTING.add(aborting)
        aborting.add_done_callback(_ABORTING.discard)

    def _wrap_streaming_request(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        first = self._first_message

        async def requests_from(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            request = await first(requests, context, method, ending_is_fine=True)
            if request is _NO_MESSAGE:  # a stream of no messages is a stream
                return
            yield request
            async for request in requests:
                yield request

        if handler.response_streaming:
            both = handler.stream_stream

            async def streamed(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                responses = both(requests_from(requests, context), context)
                if hasattr(responses, "__aiter__"):
                    async for response in responses:
                        yield response
                elif inspect.isawaitable(responses):
                    await responses

            return grpc.stream_stream_rpc_method_handler(
                streamed, handler.request_deserializer, handler.response_serializer
            )
        gathered = handler.stream_unary

        async def answered(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            response = gathered(requests_from(requests, context), context)
            return await response if inspect.isawaitable(response) else response

        return grpc.stream_unary_rpc_method_handler(answered, handler.request_deserializer, handler.response_serializer)

    async def _first_message(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext, method: str, ending_is_fine: bool = False
    ) -> Any:
        try:
            async with asyncio.timeout(self.seconds):
                request = await anext(requests, _NO_MESSAGE)
        except TimeoutError:
            log.info(
                "ended a call to %s from %s: its request message did not arrive in %g s (%s)",
                method, context.peer(), self.seconds, SETTING,
            )
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"the request message did not arrive within {self.seconds:g} s; send it with the call",
            )
        if request is _NO_MESSAGE and not ending_is_fine:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the call ended without its request message")
        return request


def _is_async(handler: grpc.RpcMethodHandler) -> bool:
    behaviour = handler.unary_unary or handler.unary_stream or handler.stream_unary or handler.stream_stream
    return inspect.iscoroutinefunction(behaviour) or inspect.isasyncgenfunction(behaviour)


async def _abort(context: grpc.aio.ServicerContext, seconds: float) -> None:
    with contextlib.suppress(grpc.aio.AbortError, grpc.aio.UsageError):
        await context.abort(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"the request message did not arrive within {seconds:g} s; send it with the call",
        )


#: Aborts under way (a task must be referenced until it is done).
_ABORTING: set[asyncio.Future[None]] = set()

#: Handlers are per method and made once; the cap only guards against a handler factory
#: that makes one per call.
_CACHE_LIMIT = 1024
