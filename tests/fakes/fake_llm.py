"""A local fake LLM server speaking OpenAI chat completions and Anthropic messages.

Tests point real adapters at it over real HTTP, so nothing reaches the internet::

    async with FakeLlmServer() as fake:
        fake.enqueue(Reply.error(429, headers={"Retry-After": "1"}), Reply.text("hi"))
        model = LlmFactory(env={}).create(fake.llm_config())
        ...
        assert len(fake.requests) == 2

Routes: ``POST …/chat/completions`` (OpenAI, any prefix, so Azure's
``/openai/deployments/{d}/chat/completions`` works too) and ``POST …/messages``
(Anthropic). Each request is recorded (:class:`RecordedRequest`) and answered with the
next queued :class:`Reply`; with the queue empty, the ``rule`` callable decides, and
without a rule (or when it returns None) the server echoes: it answers with the text of
the last user message (or the last tool result), with no tool calls.

Connections are counted (:attr:`FakeLlmServer.connections_opened` / ``_closed``) and a
handler whose client went away is cancelled and counted (``handlers_cancelled``), so a
test can prove that cancelling a request really dropped its connection.

A :meth:`Reply.hold` keeps its request unanswered until :meth:`FakeLlmServer.release`
(from any thread); ``held`` counts the requests waiting there and ``answered`` the
responses handed back, so a test can check state "while the LLM call is still in flight"
instead of timing it.

As a process, for benchmarks::

    python -m tests.fakes.fake_llm --port 8888 --latency-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from tests.fakes.llm_wire import (
    FakeToolCall,
    Protocol,
    Reply,
    anthropic_answer,
    error_body,
    openai_answer,
    text_of,
    words,
)

__all__ = (
    "FakeLlmServer",
    "FakeToolCall",
    "RecordedRequest",
    "Reply",
    "Rule",
    "echo_rule",
    "run_with_fake_llm",
    "tool_then_answer_rule",
)


@dataclass
class RecordedRequest:
    """What the fake received."""

    protocol: Protocol
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any
    received_at: float

    @property
    def messages(self) -> list[Any]:
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return messages if isinstance(messages, list) else []

    def last_input_text(self) -> str:
        """The last user message's text, or the last tool result's (what echo answers)."""
        for message in reversed(self.messages):
            if not isinstance(message, dict) or message.get("role") not in ("user", "tool"):
                continue
            text = text_of(message.get("content"))
            if text:
                return text
        return ""


Rule = Callable[[RecordedRequest], Reply | None]

#: Every request body any fake in this process received, raw: the suite's sly_data audit
#: (tests/conftest.py) checks that no sly_data value ever reached an LLM.
RECEIVED_BODIES: list[bytes] = []


class _Dropped(Exception):
    """Raised inside a handler to close the connection without answering."""


class _CountingServer(web.Server):
    def __init__(self, handler: Any, owner: FakeLlmServer) -> None:
        super().__init__(handler, handler_cancellation=True)
        self._owner = owner

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        self._owner.connections_opened += 1

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        self._owner.connections_closed += 1


class FakeLlmServer:
    """The fake server. Use as an async context manager, or ``start()``/``stop()``."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_ms: float = 0.0,
        rule: Rule | None = None,
        record: bool = True,
    ) -> None:
        self.host, self.port = host, port
        self.latency = latency_ms / 1000.0
        self.rule = rule
        self.record = record
        self.requests: list[RecordedRequest] = []
        self.request_count = 0
        self.connections_opened = 0
        self.connections_closed = 0
        #: Handlers cancelled because their client went away (not scripted drops).
        self.handlers_cancelled = 0
        #: Connections closed by a scripted :meth:`Reply.drop`.
        self.connections_dropped = 0
        #: Requests waiting in a :meth:`Reply.hold` right now.
        self.held = 0
        #: Responses handed back (any status), not counting drops and cancelled handlers.
        self.answered = 0
        # What the holds of now wait on; release() sets it and puts a fresh one in its place.
        # Created unbound, so it works on whichever loop serves.
        self._released = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._runner: web.ServerRunner | None = None

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> FakeLlmServer:
        self._loop = asyncio.get_running_loop()
        self._runner = web.ServerRunner(_CountingServer(self._handle, self), shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeLlmServer:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- what tests use --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base(self) -> str:
        return f"{self.url}/v1"

    @property
    def open_connections(self) -> int:
        return self.connections_opened - self.connections_closed

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        self._queue.extend(replies)

    def release(self) -> None:
        """Let the replies held now answer; a hold that arrives later waits for the next
        release (so wait for ``held`` first). Callable from any thread (a FakeInThread's
        test thread included)."""
        if self._loop is None or self._loop.is_closed():
            self._open_gate()
        else:
            self._loop.call_soon_threadsafe(self._open_gate)

    def _open_gate(self) -> None:
        released, self._released = self._released, asyncio.Event()
        released.set()

    def llm_config(self, protocol: Protocol = "openai", **extra: Any) -> dict[str, Any]:
        """An llm_config pointing a real adapter at this server."""
        if protocol == "anthropic":
            config: dict[str, Any] = {
                "class": "anthropic",
                "model_name": "claude-fake",
                "anthropic_api_url": self.url,
                "anthropic_api_key": "test-anthropic-key",
            }
        else:
            config = {
                "class": "openai",
                "model_name": "fake-model",
                "openai_api_base": self.openai_base,
                "openai_api_key": "test-openai-key",
            }
        config.update(extra)
        return config

    async def wait_for(self, predicate: Callable[[], bool], within: float = 2.0) -> bool:
        """Poll ``predicate`` until true or ``within`` seconds pass; its last value."""
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    # -- serving ---------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        protocol: Protocol
        if request.method == "POST" and request.path.endswith("/chat/completions"):
            protocol = "openai"
        elif request.method == "POST" and request.path.endswith("/messages"):
            protocol = "anthropic"
        elif request.path in ("/", "/health"):
            return web.json_response({"status": "ok"})
        else:
            return web.json_response({"error": {"message": "no such route"}}, status=404)
        raw = await request.read()
        if self.record:
            RECEIVED_BODIES.append(raw)
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        recorded = RecordedRequest(
            protocol=protocol,
            path=request.path,
            query=dict(request.query),
            headers={name.lower(): value for name, value in request.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        self.request_count += 1
        if self.record:
            self.requests.append(recorded)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)  # the behaviour: a model's latency
            response = await self._respond(request, recorded, self._next_reply(recorded))
            self.answered += 1
            return response
        except _Dropped:
            self.connections_dropped += 1
            if request.transport is not None:
                request.transport.abort()
            # Nothing can be written any more; end this handler without a response.
            raise asyncio.CancelledError from None
        except asyncio.CancelledError:
            self.handlers_cancelled += 1
            raise

    def _next_reply(self, recorded: RecordedRequest) -> Reply:
        if self._queue:
            return self._queue.popleft()
        if self.rule is not None:
            reply = self.rule(recorded)
            if reply is not None:
                return reply
        return Reply.answer(recorded.last_input_text())

    async def _respond(self, request: web.BaseRequest, recorded: RecordedRequest, reply: Reply) -> web.StreamResponse:
        if reply.kind == "stall":
            await asyncio.sleep(reply.seconds)  # the behaviour: Reply.stall, a slow model
            return await self._respond(request, recorded, reply.then or Reply.answer(recorded.last_input_text()))
        if reply.kind == "hold":
            self.held += 1
            released = self._released
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(released.wait(), reply.seconds)
            finally:
                self.held -= 1
            return await self._respond(request, recorded, reply.then or Reply.answer(recorded.last_input_text()))
        if reply.kind == "drop":
            raise _Dropped
        if reply.kind == "garbage":
            return web.Response(status=reply.status, text=reply.body or "", content_type="text/html")
        if reply.kind == "error":
            return web.json_response(error_body(recorded.protocol, reply), status=reply.status, headers=reply.headers)
        return web.json_response(self._answer_body(recorded, reply), headers=reply.headers)

    def _answer_body(self, recorded: RecordedRequest, reply: Reply) -> dict[str, Any]:
        model = reply.model or (recorded.body or {}).get("model") or "fake-model"
        prompt_words = sum(words(text_of(m.get("content"))) for m in recorded.messages if isinstance(m, dict))
        usage = reply.usage or (prompt_words, words(reply.text))
        render = anthropic_answer if recorded.protocol == "anthropic" else openai_answer
        return render(model, reply, usage, self._ids)


def echo_rule(prefix: str = "") -> Rule:
    """A rule answering ``prefix`` + the last input text (the default, with a prefix)."""
    return lambda request: Reply.answer(prefix + request.last_input_text())


def tool_then_answer_rule(tool_name: str, arguments: Mapping[str, Any]) -> Rule:
    """A rule calling ``tool_name`` once per conversation, then echoing the tool result."""

    def rule(request: RecordedRequest) -> Reply | None:
        already_called = any(
            isinstance(m, dict) and (m.get("role") == "tool" or _has_tool_result(m)) for m in request.messages
        )
        return None if already_called else Reply.calls(FakeToolCall(tool_name, dict(arguments)))

    return rule


def _has_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def run_with_fake_llm(
    test_body: Callable[[FakeLlmServer], Awaitable[None]],
    *,
    within: float = 30.0,
    **server_options: Any,
) -> None:
    """Run ``test_body(fake)`` on a fresh loop with a started fake, bounded in time.

    For synchronous pytest tests (there is no pytest-asyncio)::

        def test_something() -> None:
            async def body(fake: FakeLlmServer) -> None: ...
            run_with_fake_llm(body)
    """

    async def main() -> None:
        async with FakeLlmServer(**server_options) as fake:
            await asyncio.wait_for(test_body(fake), within)

    asyncio.run(main())


async def serve_forever(
    host: str, port: int, latency_ms: float, ready: Callable[[str], Awaitable[None]] | None = None
) -> None:
    """Run a non-recording fake until SIGINT/SIGTERM (the benchmark entry point)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with FakeLlmServer(host=host, port=port, latency_ms=latency_ms, record=False) as fake:
        print(f"fake LLM listening on {fake.url} (OpenAI base {fake.openai_base})", flush=True)
        if ready is not None:
            await ready(fake.url)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    asyncio.run(serve_forever(args.host, args.port, args.latency_ms))


if __name__ == "__main__":
    main()
