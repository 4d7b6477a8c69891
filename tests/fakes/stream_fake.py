"""A fake of every provider's *streaming* method, on a free loopback port.

Routes, by path (any prefix): ``…/chat/completions`` (OpenAI-compatible, SSE),
``…/messages`` (Anthropic, SSE), ``…:streamGenerateContent`` (Gemini, SSE with
``alt=sse``), ``/model/{id}/converse-stream`` (Bedrock ConverseStream) and
``/model/{id}/invoke-with-response-stream`` (Bedrock InvokeModel, Anthropic events), both
AWS event-stream. A chat-completions request that does not stream gets the same script
as one whole reply (recorded, so a test sees which way it was asked); an Anthropic one
without ``"stream": true`` is answered 400.

Each reply comes from the queue (:meth:`StreamFake.enqueue`) or else echoes the last user
text, rendered by :mod:`tests.fakes.stream_wire`. The events are written one at a time,
``pace`` seconds apart, each cut into :func:`~tests.fakes.stream_wire.awkward_chunks`
written separately when ``awkward`` is set. :attr:`StreamFake.events_written` counts
what has gone out, and connections are counted as they close, so a test can see that a
client's disconnect closed the provider connection before the reply was over.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from tests.fakes import stream_wire as wire
from tests.fakes.fake_llm import RECEIVED_BODIES
from tests.fakes.sigv4_check import check_request

RENDER: dict[str, Callable[[wire.Script], list[bytes]]] = {
    "openai": wire.openai_events,
    "anthropic": wire.anthropic_events,
    "gemini": wire.gemini_events,
    "bedrock-converse": wire.converse_events,
    "bedrock-invoke": wire.bedrock_invoke_events,
}
CONTENT_TYPES = {"openai": "text/event-stream", "anthropic": "text/event-stream", "gemini": "text/event-stream"}


def route_kind(path: str) -> str:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith(":streamGenerateContent"):
        return "gemini"
    if path.endswith("/converse-stream"):
        return "bedrock-converse"
    if path.endswith("/invoke-with-response-stream"):
        return "bedrock-invoke"
    if path.endswith("/messages"):
        return "anthropic"
    return "unknown"


@dataclass
class StreamSeen:
    kind: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


class _Server(web.Server):
    def __init__(self, handler: Any, owner: StreamFake) -> None:
        super().__init__(handler, handler_cancellation=True)
        self._owner = owner

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        self._owner.connections_closed += 1
        self._owner.closed_at.append(time.monotonic())
        self._owner.closed.set()


class StreamFake:
    """Use as an async context manager; see the module docstring."""

    def __init__(self, *, pace: float = 0.0, awkward: bool = True, aws: tuple[str, str, str] | None = None) -> None:
        """``aws``: (access key, secret key, region) to check each Bedrock request's SigV4
        signature with (tests/fakes/sigv4_check.py), answering 403 when it does not match."""
        self.pace = pace
        self.aws = aws
        self.awkward = awkward
        self.requests: list[StreamSeen] = []
        self.events_written = 0
        #: Events the current reply has in all (set when it starts).
        self.events_total = 0
        self.replies_finished = 0
        self.connections_closed = 0
        self.closed_at: list[float] = []
        #: Set when a connection closes.
        self.closed = asyncio.Event()
        self._queue: deque[wire.Script] = deque()
        self._runner: web.ServerRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *scripts: wire.Script) -> None:
        self._queue.extend(scripts)

    async def __aenter__(self) -> StreamFake:
        self._runner = web.ServerRunner(_Server(self._handle, self), shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def llm_config(self, kind: str = "openai", **extra: Any) -> dict[str, Any]:
        """An llm_config pointing a real adapter at this fake."""
        configs: dict[str, dict[str, Any]] = {
            "openai": {"class": "openai", "model_name": "fake-model", "openai_api_base": f"{self.url}/v1",
                       "openai_api_key": "test-key"},
            "anthropic": {"class": "anthropic", "model_name": "claude-fake", "anthropic_api_url": self.url,
                          "anthropic_api_key": "test-key"},
            "gemini": {"class": "gemini", "model_name": "gemini-fake", "base_url": self.url,
                       "google_api_key": "test-key"},
            "bedrock-converse": {"class": "bedrock", "model_name": "amazon.nova-fake", "beta_use_converse_api": True,
                                 "endpoint_url": self.url, "region_name": "us-east-1",
                                 "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "secret"},
            "bedrock-invoke": {"class": "anthropic-bedrock", "model_name": "anthropic.claude-fake",
                               "endpoint_url": self.url, "region_name": "us-east-1",
                               "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "secret"},
        }  # fmt: skip
        return {**configs[kind], **extra}

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = await request.read()
        RECEIVED_BODIES.append(raw)
        kind = route_kind(request.path)
        body = json.loads(raw) if raw else None
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(StreamSeen(kind, request.path, dict(request.query), headers, body))
        if kind.startswith("bedrock") and self.aws is not None:
            access, secret, region = self.aws
            problem = check_request(
                request.method, request.raw_path.split("?")[0], request.query_string, headers, raw,
                access_key=access, secret_key=secret, region=region,
            )  # fmt: skip
            if problem:
                return web.json_response({"message": problem}, status=403)
        if kind == "openai" and isinstance(body, dict) and body.get("stream") is not True:
            script = self._queue.popleft() if self._queue else wire.Script(text=f"echo: {_last_text(body)}")
            return web.json_response(wire.openai_whole(script))
        if kind == "anthropic" and not (isinstance(body, dict) and body.get("stream") is True):
            return web.json_response({"error": {"message": "this fake only streams"}}, status=400)
        if kind == "gemini" and request.query.get("alt") != "sse":
            return web.json_response({"error": {"code": 400, "message": "alt=sse expected"}}, status=400)
        if kind == "unknown":
            return web.json_response({"error": {"message": "no such route"}}, status=404)
        script = self._queue.popleft() if self._queue else wire.Script(text=f"echo: {_last_text(body)}")
        events = RENDER[kind](script)[: script.stop_after]
        self.events_total, self.events_written = len(events), 0
        content_type = CONTENT_TYPES.get(kind, "application/vnd.amazon.eventstream")
        response = web.StreamResponse(headers={"Content-Type": content_type, **script.extra_headers})
        await response.prepare(request)
        for event in events:
            chunks = wire.awkward_chunks(event) if self.awkward else [event]
            for number, chunk in enumerate(chunks):
                if number:
                    # A moment between the cuts, so that the client reads them apart
                    # rather than as one coalesced segment.
                    await asyncio.sleep(0.001)
                await response.write(chunk)
            self.events_written += 1
            if self.pace:
                await asyncio.sleep(self.pace)  # the behaviour: a model that writes at a pace
        await response.write_eof()
        self.replies_finished += 1
        return response


def _last_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    for message in reversed(body.get("messages") or body.get("contents") or []):
        content = message.get("content", message.get("parts"))
        if isinstance(content, str):
            return content
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                return str(block["text"])
    return ""
