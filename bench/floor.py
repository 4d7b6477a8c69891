"""S6's floors: the least a Python server on this machine can do per chat.

``python -m bench.floor grpc``: a bare grpc.aio server answering StreamingChat with one
ChatResponse echoing the text. ``python -m bench.floor http``: a bare aiohttp server
answering ``POST /api/v1/{agent}/streaming_chat`` with one NDJSON line echoing the text.
No LLM, no runtime, no gateway: what is left is the framework's own cost per call, which
bounds what S2 (HTTP) and S4 (gRPC) could reach. ``python -m bench.floor http-llm --llm-url
URL``: the HTTP floor plus what S2 does besides our code, one OpenAI-style call to the fake
LLM through a pooled aiohttp client (as ``neuro_san/llm/http.py`` makes it) whose answer is
the line; so S2's CPU per chat minus this floor's is what our code costs. ``python -m
bench.floor relay --llm-url URL``: S9's floor, the least a token costs: the same call with
``stream: true``, each SSE event the fake LLM writes read and relayed as one NDJSON line
(``TOKEN_DELTA``-shaped), flushed, then a last line with the whole answer.
Prints ``READY port=<port>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import AsyncIterator, Sequence

import aiohttp
import grpc
from aiohttp import web
from neuro_san.api.grpc import agent_pb2, chat_pb2

from bench.fake import run_loop
from bench.load import GRPC_METHOD
from neuro_san.service.server import PENDING_CALLS


class EchoHandler(grpc.GenericRpcHandler):
    def __init__(self, sleep_s: float = 0.0) -> None:
        self._sleep = sleep_s

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if handler_call_details.method != GRPC_METHOD:  # type: ignore[attr-defined]
            return None
        return grpc.unary_stream_rpc_method_handler(
            self.chat,
            request_deserializer=agent_pb2.ChatRequest.FromString,
            response_serializer=agent_pb2.ChatResponse.SerializeToString,
        )

    async def chat(
        self, request: agent_pb2.ChatRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[agent_pb2.ChatResponse]:
        if self._sleep:
            await asyncio.sleep(self._sleep)
        response = agent_pb2.ChatResponse()
        response.response.type = chat_pb2.ChatMessage.AGENT_FRAMEWORK
        response.response.text = request.user_message.text
        yield response


async def http_chat(request: web.Request) -> web.StreamResponse:
    sleep_s: float = request.app["sleep_s"]
    if sleep_s:
        await asyncio.sleep(sleep_s)
    body = json.loads(await request.read())
    text = body.get("user_message", {}).get("text", "")
    stream = web.StreamResponse(status=200, headers={"Content-Type": "application/json-lines"})
    await stream.prepare(request)
    line = {"response": {"type": "AGENT_FRAMEWORK", "text": text}}
    await stream.write(json.dumps(line).encode() + b"\n")
    await stream.write_eof()
    return stream


async def http_llm_chat(request: web.Request) -> web.StreamResponse:
    body = json.loads(await request.read())
    text = body.get("user_message", {}).get("text", "")
    completion = {"model": "fake-model", "messages": [{"role": "user", "content": text}]}
    session: aiohttp.ClientSession = request.app["llm"]
    async with session.post(request.app["llm_url"], json=completion) as reply:
        answer = await reply.json()
    stream = web.StreamResponse(status=200, headers={"Content-Type": "application/json-lines"})
    await stream.prepare(request)
    line = {"response": {"type": "AI", "text": answer["choices"][0]["message"]["content"]}}
    await stream.write(json.dumps(line).encode() + b"\n")
    await stream.write_eof()
    return stream


async def relay_chat(request: web.Request) -> web.StreamResponse:
    body = json.loads(await request.read())
    text = body.get("user_message", {}).get("text", "")
    completion = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": text}]}
    session: aiohttp.ClientSession = request.app["llm"]
    stream = web.StreamResponse(status=200, headers={"Content-Type": "application/json-lines"})
    await stream.prepare(request)
    answer: list[str] = []
    async with session.post(request.app["llm_url"], json=completion) as reply:
        async for raw in reply.content:  # one SSE line at a time, as the fake writes them
            if not raw.startswith(b"data: ") or raw.startswith(b"data: [DONE]"):
                continue
            choices = json.loads(raw[6:]).get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content")
            if piece:
                answer.append(piece)
                line = {"response": {"type": "TOKEN_DELTA", "text": piece, "origin": [{"tool": "echo"}]}}
                await stream.write(json.dumps(line).encode() + b"\n")
    final = {"response": {"type": "AGENT_FRAMEWORK", "text": "".join(answer)}}
    await stream.write(json.dumps(final).encode() + b"\n")
    await stream.write_eof()
    return stream


async def serve(kind: str, sleep_s: float = 0.0, llm_url: str = "", port: int = 0) -> None:
    """``port``: share that port with the floor processes already on it (SO_REUSEPORT: the
    HTTP floor on as many processes as ``serve --workers``); 0: a free port of its own."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if kind == "grpc":
        # The same pending-call limits as the real server (see neuro_san/service/server.py).
        server = grpc.aio.server(
            options=[
                ("grpc.server.max_pending_requests", PENDING_CALLS),
                ("grpc.server.max_pending_requests_hard_limit", 2 * PENDING_CALLS),
            ]
        )
        server.add_generic_rpc_handlers([EchoHandler(sleep_s)])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(f"READY port={port}", flush=True)
        await stop.wait()
        await server.stop(0)
        return
    app = web.Application()
    app["sleep_s"] = sleep_s
    if kind in ("http-llm", "relay"):
        app["llm_url"] = f"{llm_url.rstrip('/')}/chat/completions"
        app["llm"] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=4096),  # as neuro_san/llm/http.py (the default total is 100)
            headers={"Authorization": "Bearer bench-key"},
        )
    handlers = {"http": http_chat, "http-llm": http_llm_chat, "relay": relay_chat}
    app.router.add_post("/api/v1/{agent}/streaming_chat", handlers[kind])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096, reuse_port=True)
    await site.start()
    print(f"READY port={runner.addresses[0][1]}", flush=True)
    await stop.wait()
    await runner.cleanup()
    if kind in ("http-llm", "relay"):
        await app["llm"].close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="bare echo servers: the benchmark's floor")
    parser.add_argument("kind", choices=("grpc", "http", "http-llm", "relay"))
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--sleep-ms", type=float, default=0.0, help="wait this long per chat (S5's floor)")
    parser.add_argument("--llm-url", default="", help="http-llm: the fake LLM's OpenAI base URL (…/v1)")
    parser.add_argument("--port", type=int, default=0, help="http: join the floor processes on this port")
    args = parser.parse_args(argv)
    if args.kind in ("http-llm", "relay") and not args.llm_url:
        parser.error(f"{args.kind} needs --llm-url")
    run_loop(serve(args.kind, args.sleep_ms / 1000, args.llm_url, args.port), args.uvloop)


if __name__ == "__main__":
    main()
