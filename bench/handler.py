"""One-process micro-benchmarks of the gRPC path (issue 27): ``python -m bench.handler``.

``service``: the StreamingChat handler (``AgentRouter``) per chat, against a host that answers
at once (no runtime, no LLM), through the in-process ``LocalContext``, the log line written to
``/dev/null``: what the service layer and the wire conversion cost per chat. Run it in two
checkouts to compare two versions.

``announce``: a bare grpc.aio unary-stream echo, client and server in this process on loopback,
with and without sending the request id as initial metadata before its one message (what
``agent_service._announce`` does), in alternating rounds: what that extra C-core batch costs.

Both report process CPU per call (``time.process_time``) per round and, for ``announce``, the
ratio of the two arms with its spread: on shared cores read the ratio, not the microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from neuro_san.api.grpc import agent_pb2

from bench.fake import run_loop
from gateway.invokers.local_call import LocalContext
from neuro_san.core.messages import ChatContext, ChatHistory, ChatMessage, MessageType, Origin
from neuro_san.service.agent_service import AgentRouter
from neuro_san.service.logs import configure_logging

TEXT = "hello, benchmark"


async def service_rounds(rounds: int, chats: int, sink: Any) -> list[float]:
    echo = (Origin("echo", 1),)
    answer = ChatMessage(
        type=MessageType.AGENT_FRAMEWORK, text=TEXT, origin=echo,
        chat_context=ChatContext(chat_histories=[ChatHistory(origin=echo, messages=[
            ChatMessage(type=MessageType.HUMAN, text=TEXT), ChatMessage(type=MessageType.AI, text=TEXT, origin=echo),
        ])]),
    )  # fmt: skip

    class Host:  # the part of AgentApi a StreamingChat uses
        def has_agent(self, agent: str) -> bool:
            return agent == "echo"

        def is_public(self, agent: str) -> bool:
            return True

        async def chat(self, agent: str, request: Any) -> AsyncIterator[ChatMessage]:
            yield answer

    configure_logging("INFO", json_logs=True)
    logging.getLogger().handlers[0].setStream(sink)  # type: ignore[attr-defined]
    router = AgentRouter(Host(), forwarded_metadata=("request_id", "user_id"))  # type: ignore[arg-type]
    behaviour = router._streaming_chat(None)
    request = agent_pb2.ChatRequest(user_message={"text": TEXT})
    metadata = (("agent-name", "echo"), ("user-agent", "grpc-python-asyncio"), ("x-neuro-san-client", "127.0.0.1"))
    loop = asyncio.get_running_loop()
    results = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(chats):
            async for response in behaviour(request, LocalContext(metadata, None, loop)):  # type: ignore[arg-type]
                response.SerializeToString()
        results.append((time.process_time() - started) / chats * 1e6)
    return results


async def announce_rounds(rounds: int, calls: int, clients: int = 16) -> tuple[list[float], list[float]]:
    sending = [True]

    async def handler(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        if sending[0]:
            await context.send_initial_metadata((("request-id", "0123456789abcdef"),))
        yield request

    class Echo(grpc.GenericRpcHandler):
        def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
            return grpc.unary_stream_rpc_method_handler(handler)

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((Echo(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    call = channel.unary_stream("/bench.Echo/StreamingChat")

    async def one_round(count: int) -> float:
        async def client() -> None:
            for _ in range(count // clients):
                async for _ in call(TEXT.encode(), metadata=(("agent-name", "echo"),)):
                    pass

        started = time.process_time()
        await asyncio.gather(*(client() for _ in range(clients)))
        return (time.process_time() - started) / count * 1e6

    with_it: list[float] = []
    without: list[float] = []
    for flag in (True, False):  # warm both
        sending[0] = flag
        await one_round(calls // 5)
    for index in range(rounds):
        for flag in (True, False) if index % 2 else (False, True):  # the order alternates too
            sending[0] = flag
            (with_it if flag else without).append(await one_round(calls))
    await channel.close()
    await server.stop(0)
    return with_it, without


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("what", choices=("service", "announce"))
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=3000, help="chats (service) or calls (announce) per round")
    parser.add_argument("--uvloop", action="store_true")
    args = parser.parse_args(argv)
    if args.what == "service":
        with open("/dev/null", "w") as sink:
            per_round = run_loop(service_rounds(args.rounds, args.calls, sink), args.uvloop)
        print("µs CPU per chat, by round:", " ".join(f"{value:.1f}" for value in per_round))
        print(f"median {statistics.median(per_round):.1f}, min {min(per_round):.1f}, max {max(per_round):.1f}")
        return 0
    with_it, without = run_loop(announce_rounds(args.rounds, args.calls), args.uvloop)
    ratios = [b / a for a, b in zip(with_it, without, strict=True)]
    saved = [a - b for a, b in zip(with_it, without, strict=True)]
    print("with the announce, µs CPU per call (client + server):", " ".join(f"{v:.0f}" for v in with_it))
    print("without:", " ".join(f"{v:.0f}" for v in without))
    print(f"without/with median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    print(f"difference median {statistics.median(saved):.0f} µs (min {min(saved):.0f}, max {max(saved):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
