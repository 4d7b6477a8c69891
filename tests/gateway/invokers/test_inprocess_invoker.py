"""The in-process invoker's calls behave as grpc.aio calls do, without a channel.

Real ``grpc`` method handlers (as the service layer registers them) run through the real
invoker; no gRPC server is made, so nothing here needs a child process. The whole
gateway is checked end to end under both invokers in tests/gateway/transcoder/test_gateway_http.py and
tests/gateway/invokers/test_gateway_invokers.py.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2
from neuro_san.api.grpc import agent_pb2

from gateway.invokers.inprocess import InProcessInvoker
from gateway.transcoder.frontend import default_services
from gateway.transcoder.routes import Route, routes_from_services

SERVICE = "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService"
SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="")


def _route(method: str) -> Route:
    return next(r for r in routes_from_services(default_services()) if r.grpc_path == f"/{SERVICE}/{method}")


class Behaviour:
    """A servicer for StreamingChat and Function whose behaviour the request text picks."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.stalled = asyncio.Event()  # a "slow" chat has sent its messages and now waits
        self.seen_metadata: tuple[tuple[str, Any], ...] = ()

    async def chat(self, request: agent_pb2.ChatRequest, context: Any) -> AsyncIterator[agent_pb2.ChatResponse]:
        self.seen_metadata = tuple(context.invocation_metadata())
        SEEN.set("inside the call")
        await context.send_initial_metadata((("request-id", "r-9"),))
        text = request.user_message.text
        if text == "abort":
            context.set_trailing_metadata((("grpc-status-details-bin", b"\x08\x05"),))
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such agent")
        if text == "big":
            yield agent_pb2.ChatResponse(response={"text": "x" * 5000})
        for index in range(3):
            yield agent_pb2.ChatResponse(response={"text": f"{text}-{index}"})
        if text == "slow":
            try:
                self.stalled.set()
                await asyncio.sleep(30)  # the behaviour: a handler that never ends by itself
            except asyncio.CancelledError:
                self.cancelled.set()
                raise

    async def function(self, _request: agent_pb2.FunctionRequest, context: Any) -> agent_pb2.FunctionResponse:
        await context.send_initial_metadata((("request-id", "r-1"),))
        return agent_pb2.FunctionResponse(function={"description": "does things"})


def _invoker(behaviour: Behaviour, limit: int = 1 << 20) -> InProcessInvoker:
    handlers = {
        "StreamingChat": grpc.unary_stream_rpc_method_handler(behaviour.chat),
        "Function": grpc.unary_unary_rpc_method_handler(behaviour.function),
    }
    generic = grpc.method_handlers_generic_handler(SERVICE, handlers)
    return InProcessInvoker([generic], health.aio.HealthServicer(), limit)


def _chat(text: str) -> agent_pb2.ChatRequest:
    return agent_pb2.ChatRequest(user_message={"text": text})


def test_stream_messages_metadata_and_isolated_context() -> None:
    async def scenario() -> None:
        behaviour = Behaviour()
        call = _invoker(behaviour).callable_for(_route("StreamingChat"))(
            _chat("hi"), metadata=[("agent-name", "echo"), ("user_id", "u")], timeout=5
        )
        first = await call.read()
        assert first.response.text == "hi-0"
        assert tuple(await call.initial_metadata()) == (("request-id", "r-9"),)
        rest = [message.response.text async for message in call]
        assert rest == ["hi-1", "hi-2"]
        assert await call.read() is grpc.aio.EOF
        assert await call.code() == grpc.StatusCode.OK and call.done()
        assert behaviour.seen_metadata == (("agent-name", "echo"), ("user_id", "u"))
        assert SEEN.get() == "", "the handler's contextvars stay in its own task"

    asyncio.run(scenario())


def test_unary_and_health() -> None:
    async def scenario() -> None:
        invoker = _invoker(Behaviour())
        call = invoker.callable_for(_route("Function"))(agent_pb2.FunctionRequest(), metadata=(), timeout=None)
        response = await call
        assert response.function.description == "does things"
        assert tuple(await call.initial_metadata()) == (("request-id", "r-1"),)
        assert tuple(await call.trailing_metadata()) == ()
        assert await invoker.health("", 1.0) == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await invoker.health("nobody", 1.0)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND

    asyncio.run(scenario())


def test_abort_keeps_code_details_and_trailers() -> None:
    async def scenario() -> None:
        call = _invoker(Behaviour()).callable_for(_route("StreamingChat"))(_chat("abort"), metadata=(), timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call.read()
        error = info.value
        assert error.code() == grpc.StatusCode.NOT_FOUND and error.details() == "no such agent"
        assert tuple(error.trailing_metadata()) == (("grpc-status-details-bin", b"\x08\x05"),)
        assert tuple(error.initial_metadata()) == (("request-id", "r-9"),)

    asyncio.run(scenario())


def test_deadline_and_cancel_stop_the_handler() -> None:
    async def scenario() -> None:
        behaviour = Behaviour()
        stream = _invoker(behaviour).callable_for(_route("StreamingChat"))
        call = stream(_chat("slow"), metadata=(), timeout=0.3)
        assert [m.response.text for m in [await call.read() for _ in range(3)]] == ["slow-0", "slow-1", "slow-2"]
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call.read()
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await asyncio.wait_for(behaviour.cancelled.wait(), 2)

        behaviour.cancelled.clear()
        call = stream(_chat("slow"), metadata=(), timeout=None)
        await call.read()
        assert call.cancel() and call.cancelled()
        await asyncio.wait_for(behaviour.cancelled.wait(), 2)
        assert not call.cancel(), "cancelling twice does nothing"

    asyncio.run(scenario())


def test_a_reader_cancelled_mid_read_cancels_the_call() -> None:
    """As grpc.aio: a task cancelled while it waits on ``read()`` (a front-end's task being
    cancelled, e.g. A2A tasks/cancel) cancels the call and so stops the handler."""

    async def scenario() -> None:
        behaviour = Behaviour()
        stream = _invoker(behaviour).callable_for(_route("StreamingChat"))
        call = stream(_chat("slow"), metadata=(), timeout=None)

        read: list[object] = []
        all_read = asyncio.Event()

        async def consume() -> None:
            async for message in call:
                read.append(message)
                if len(read) == 3:
                    all_read.set()

        reader = asyncio.create_task(consume())
        # The three messages are read and the handler waits: the reader now waits on it.
        await asyncio.wait_for(asyncio.gather(all_read.wait(), behaviour.stalled.wait()), 10)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        await asyncio.wait_for(behaviour.cancelled.wait(), 2)
        assert call.cancelled()

    asyncio.run(scenario())


def test_message_size_limits_both_ways() -> None:
    async def scenario() -> None:
        stream = _invoker(Behaviour(), limit=1000).callable_for(_route("StreamingChat"))
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stream(_chat("y" * 2000), metadata=(), timeout=5).read()
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "Sent message larger than max" in (info.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stream(_chat("big"), metadata=(), timeout=5).read()
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "Received message larger than max" in (info.value.details() or "")

    asyncio.run(scenario())


def test_drain_waits_then_refuses_and_cancels() -> None:
    async def scenario() -> None:
        behaviour = Behaviour()
        invoker = _invoker(behaviour)
        stream = invoker.callable_for(_route("StreamingChat"))
        quick = stream(_chat("hi"), metadata=(), timeout=5)
        slow = stream(_chat("slow"), metadata=(), timeout=None)
        await slow.read()
        await invoker.drain(0.3)
        assert [m.response.text async for m in quick] == ["hi-0", "hi-1", "hi-2"]
        assert await slow.code() == grpc.StatusCode.UNAVAILABLE  # as a stopping server ends it
        await asyncio.wait_for(behaviour.cancelled.wait(), 2)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stream(_chat("late"), metadata=(), timeout=5).read()
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE

    asyncio.run(scenario())


def test_unknown_method_is_unimplemented() -> None:
    async def scenario() -> None:
        generic = grpc.method_handlers_generic_handler("other.Service", {})
        invoker = InProcessInvoker([generic], health.aio.HealthServicer(), 1000)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await invoker.callable_for(_route("Function"))(agent_pb2.FunctionRequest(), metadata=(), timeout=1)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED

    asyncio.run(scenario())


def test_a_handler_that_cancels_its_own_task_and_catches_it_goes_on() -> None:
    """anyio's cancel scopes (httpx, the A2A client of a tool) cancel the task they run in
    and catch that cancellation: whichever task runs the handler, the call goes on."""

    async def scenario() -> None:
        async def chat(_request: agent_pb2.ChatRequest, _context: Any) -> AsyncIterator[agent_pb2.ChatResponse]:
            for index in range(3):
                task = asyncio.current_task()
                assert task is not None
                asyncio.get_running_loop().call_soon(task.cancel)
                try:
                    await asyncio.sleep(5)  # cancelled at once by the line above
                except asyncio.CancelledError:
                    task.uncancel()
                yield agent_pb2.ChatResponse(response={"text": str(index)})

        generic = grpc.method_handlers_generic_handler(
            SERVICE, {"StreamingChat": grpc.unary_stream_rpc_method_handler(chat)}
        )
        invoker = InProcessInvoker([generic], health.aio.HealthServicer(), 1 << 20)
        call = invoker.callable_for(_route("StreamingChat"))(_chat("hi"), metadata=(), timeout=5)
        assert [message.response.text async for message in call] == ["0", "1", "2"]
        assert await call.code() == grpc.StatusCode.OK

    asyncio.run(scenario())
