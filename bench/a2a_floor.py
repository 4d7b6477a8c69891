"""S10's A2A floor: the a2a-sdk's own server, built as the SDK's samples build one.

``python -m bench.a2a_floor [--uvloop] [--stream-words N]`` serves one echo agent:

- a Starlette app from the SDK's route factories: the agent card
  (``create_agent_card_routes``), the JSON-RPC binding (``create_jsonrpc_routes``) and the
  HTTP+JSON binding (``create_rest_routes``), under the paths our server gives the ``echo``
  network (``/a2a/echo``, ``/a2a/echo/rest/...``), so one load-generator request shape
  serves both servers;
- run by uvicorn with ``http="httptools"`` on uvloop (``asyncio`` without ``--uvloop``, as
  every bench process follows ``--no-uvloop``; h11 if httptools is not installed, said in
  the READY line). The loop is made here, as ``uvicorn.run(loop="uvloop")`` makes it
  (``uvloop.run``), because the gRPC server shares it;
- A2A's gRPC binding from the same request handler: a grpc.aio server with the SDK's
  :class:`~a2a.server.request_handlers.GrpcHandler` (``lf.a2a.v1.A2AService``);
- the SDK's :class:`~a2a.server.request_handlers.DefaultRequestHandler` and
  :class:`~a2a.server.tasks.InMemoryTaskStore`, and :class:`EchoExecutor`, which does
  what our A2A executor does around the network's answer (submitted task, working,
  the answer's artifact, completed with the answer as its message) with no network:
  the answer is the user's text.

A streaming call (``SendStreamingMessage``, ``message:stream``) streams its answer as our
server's does with the fake LLM of S10: ``--stream-words`` artifact chunks (``w0 w1 ...``,
the words the fake streams), then the whole answer in one last chunk. So per call both
servers send the SDK the same events, and what ours costs beyond this floor is our code.

SDK defaults otherwise. Its OpenTelemetry instrumentation (``trace_class`` on the handler,
dispatchers, queues; ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED`` unset means on) stays at its
default, as the samples leave it: it is part of what the SDK's own server costs (our
server turns it off unless ``AGENT_TRACING`` is on, one of the costs issue 37 asked us to
stop paying). One departure: uvicorn's per-request access log line is
off (``access_log=False``, log level ``warning``); it is uvicorn's cost, not the SDK's, and
a floor is the least the SDK's server can do. Prints ``READY http=<port> grpc=<port>
parser=<httptools|h11>``; runs until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import socket
from collections.abc import AsyncIterable, Sequence
from typing import Any

import grpc
import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultGrpcServerCallContextBuilder, DefaultRequestHandler, GrpcHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2, a2a_pb2_grpc
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette
from starlette.requests import Request

from bench.fake import run_loop

#: The network name the floor's paths carry (our server's S10 network).
AGENT = "echo"
#: The call-state key saying the call streams (the JSON-RPC dispatcher puts the method
#: in ``state["method"]`` itself; the HTTP+JSON and gRPC paths need telling).
STREAMING = "bench.streaming"
_grpc_streaming: contextvars.ContextVar[bool] = contextvars.ContextVar("bench_grpc_streaming", default=False)


class EchoExecutor(AgentExecutor):
    """The task our A2A executor makes of an echo chat, its answer the user's text."""

    def __init__(self, stream_words: int) -> None:
        self._words = [f"w{index}" for index in range(stream_words)]

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        state = context.call_context.state
        streaming = state.get("method") == "SendStreamingMessage" or state.get(STREAMING) is True
        if context.current_task is None and context.message is not None:
            task = new_task_from_user_message(context.message)
            task.id, task.context_id = str(context.task_id), str(context.context_id)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.start_work()
        artifact_id = f"{context.task_id}-answer"
        answer = context.get_user_input()
        if streaming:
            for index, word in enumerate(self._words):
                await updater.add_artifact([Part(text=word + " ")], artifact_id=artifact_id, name="answer",
                                           append=index > 0, last_chunk=False)
            answer = " ".join(self._words)
        await updater.add_artifact([Part(text=answer)], artifact_id=artifact_id, name="answer", append=False,
                                   last_chunk=True)
        await updater.complete(updater.new_agent_message([Part(text=answer)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


class _HttpContext(DefaultServerCallContextBuilder):
    """The SDK's context, marked streaming for ``message:stream`` (the REST dispatcher does
    not say which method it serves)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        if request.url.path.endswith(":stream"):
            context.state[STREAMING] = True
        return context


class _GrpcContext(DefaultGrpcServerCallContextBuilder):
    """The SDK's gRPC context, marked streaming inside ``SendStreamingMessage`` (a grpc.aio
    context does not name its method)."""

    def build(self, context: grpc.aio.ServicerContext) -> ServerCallContext:
        built = super().build(context)
        if _grpc_streaming.get():
            built.state[STREAMING] = True
        return built


class _StreamMarkingGrpcHandler(GrpcHandler):
    """The SDK's GrpcHandler; ``SendStreamingMessage`` only marks the call first (the
    context builder runs in this call's task, inside the SDK's own method)."""

    async def SendStreamingMessage(  # noqa: N802 - the gRPC method's name
        self, request: a2a_pb2.SendMessageRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterable[a2a_pb2.StreamResponse]:
        _grpc_streaming.set(True)
        async for item in super().SendStreamingMessage(request, context):
            yield item


def agent_card(http_port: int, grpc_port: int) -> AgentCard:
    base = f"http://127.0.0.1:{http_port}/a2a/{AGENT}"
    return AgentCard(
        name=AGENT, description="echoes the user's text (the benchmark's A2A floor)", version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes the text", tags=["echo"])],
    )  # fmt: skip


def _parser() -> str:
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


async def serve(use_uvloop: bool, stream_words: int) -> None:
    # Both ports are bound before the card is made: the card names them.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    http_port = listener.getsockname()[1]
    grpc_server = grpc.aio.server()
    grpc_port = grpc_server.add_insecure_port("127.0.0.1:0")
    card = agent_card(http_port, grpc_port)
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(stream_words), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    routes: list[Any] = [
        *create_agent_card_routes(card, card_url=f"/a2a/{AGENT}/.well-known/agent-card.json"),
        *create_jsonrpc_routes(handler, rpc_url=f"/a2a/{AGENT}", context_builder=_HttpContext()),
        *create_rest_routes(handler, context_builder=_HttpContext(), path_prefix=f"/a2a/{AGENT}/rest"),
    ]
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(
        _StreamMarkingGrpcHandler(handler, context_builder=_GrpcContext()), grpc_server
    )
    parser = _parser()
    config = uvicorn.Config(
        Starlette(routes=routes), loop="uvloop" if use_uvloop else "asyncio", http=parser,
        log_level="warning", access_log=False, backlog=4096,
    )  # fmt: skip
    server = uvicorn.Server(config)
    await grpc_server.start()
    serving = asyncio.ensure_future(server.serve(sockets=[listener]))  # it handles SIGTERM: should_exit
    # uvicorn sets ``started`` once it listens and offers no event for it (its lifespan
    # startup runs before it listens): polled.
    while not server.started and not serving.done():  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    if server.started:
        print(f"READY http={http_port} grpc={grpc_port} parser={parser}", flush=True)
    try:
        await serving
    finally:
        await grpc_server.stop(0)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the a2a-sdk's own server, an echo agent: S10's A2A floor")
    parser.add_argument("--uvloop", action="store_true", help="uvicorn's loop=uvloop (when installed)")
    parser.add_argument("--stream-words", type=int, default=5, help="artifact chunks of a streamed answer")
    args = parser.parse_args(argv)
    # The loop uvicorn.run(loop="uvloop") would make, made here: the gRPC server shares it.
    run_loop(serve(args.uvloop, args.stream_words), args.uvloop)


if __name__ == "__main__":
    main()
