"""The fake LLM as a process, for the benchmark: ``python -m bench.fake --latency-ms X``.

It is the suite's :class:`tests.fakes.fake_llm.FakeLlmServer`, not recording, with one
rule: when the request offers tools and holds no tool result yet, it calls the first tool
with ``{"expression": "6 * 7"}`` (what S3's calculator takes); otherwise it echoes the
last input. So the echo network makes one LLM call per chat and math_guy two. It prints
``READY port=<port>`` once it listens and runs until SIGTERM.

A request that asks to stream (``"stream": true``, as the server sends for a chat with
``stream_tokens``) is answered ``--stream-words`` words of SSE chunks, one every
``--stream-pace-ms`` (tests/fakes/stream_wire.py renders them), for S9.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, RecordedRequest, Reply, _CountingServer
from tests.fakes.stream_wire import Script, openai_events

#: Listen backlog: S5 opens ~2,000 connections at once, far past aiohttp's default 128.
BACKLOG = 4096


class BenchFakeLlm(FakeLlmServer):
    """The suite's fake with a listen backlog deep enough for S5's burst of connections,
    which streams its answer when asked to."""

    stream_words = 50
    stream_pace = 0.02

    async def _respond(self, request: web.BaseRequest, recorded: RecordedRequest, reply: Reply) -> web.StreamResponse:
        body = recorded.body
        streamed = isinstance(body, dict) and body.get("stream") is True
        if not (streamed and reply.kind == "answer" and not reply.tool_calls):
            return await super()._respond(request, recorded, reply)
        text = " ".join(f"w{index}" for index in range(self.stream_words))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in openai_events(Script(text=text, usage=(10, self.stream_words))):
            await response.write(event)
            await asyncio.sleep(self.stream_pace)
        await response.write_eof()
        return response

    async def start(self) -> BenchFakeLlm:
        self._runner = web.ServerRunner(_CountingServer(self._handle, self), shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port, backlog=BACKLOG).start()
        self.port = self._runner.addresses[0][1]
        return self


def tool_once_rule(request: RecordedRequest) -> Reply | None:
    body: Any = request.body
    tools = body.get("tools") if isinstance(body, dict) else None
    if not tools:
        return None
    if any(isinstance(m, dict) and m.get("role") == "tool" for m in request.messages):
        return None
    name = tools[0].get("function", {}).get("name", "")
    return Reply.calls(FakeToolCall(name, {"expression": "6 * 7"}))


async def serve(host: str, port: int, latency_ms: float, words: int = 50, pace_ms: float = 20.0) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    fake = BenchFakeLlm(host=host, port=port, latency_ms=latency_ms, rule=tool_once_rule, record=False)
    fake.stream_words, fake.stream_pace = words, pace_ms / 1000
    async with fake:
        print(f"READY port={fake.port}", flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the benchmark's fake LLM")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop (when installed)")
    parser.add_argument("--stream-words", type=int, default=50, help="words of a streamed answer")
    parser.add_argument("--stream-pace-ms", type=float, default=20.0, help="between the words of a streamed answer")
    args = parser.parse_args(argv)
    run_loop(serve(args.host, args.port, args.latency_ms, args.stream_words, args.stream_pace_ms), args.uvloop)


def run_loop(main_coroutine: Any, use_uvloop: bool) -> Any:
    """``asyncio.run``, or ``uvloop.run`` when asked for and installed."""
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(main_coroutine)
    return asyncio.run(main_coroutine)


if __name__ == "__main__":
    main()
