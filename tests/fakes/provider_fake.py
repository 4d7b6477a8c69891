"""A recording fake for every provider wire format, on a free loopback port.

Routes, by path (any prefix): ``…/chat/completions`` (OpenAI-compatible), ``…/messages``
(Anthropic), ``…/models/{model}:generateContent`` (Gemini), ``/model/{id}/converse``
(Bedrock Converse) and ``/model/{id}/invoke`` (Bedrock InvokeModel, Anthropic format).
Each request is recorded with its raw body and lower-case headers. Replies come from the
queue (``enqueue(status, body)``), else from ``rule(request)``, else an echo of the last
user text in the route's format (:mod:`tests.fakes.provider_bodies`).

With ``aws`` set to ``(access_key, secret_key, region)`` the Bedrock routes verify each
request's SigV4 signature (:mod:`tests.fakes.sigv4_check`) and answer 403 with AWS's
message when it does not match.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import provider_bodies as bodies
from tests.fakes.fake_llm import RECEIVED_BODIES
from tests.fakes.sigv4_check import check_request


@dataclass
class Seen:
    kind: str
    method: str
    path: str
    raw_path: str
    query: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    signature_problem: str | None = None

    def user_texts(self) -> list[str]:
        return [t for t in _texts(self.body) if t]


def _texts(body: Any) -> Iterator[str]:
    if not isinstance(body, dict):
        return
    for message in body.get("messages") or body.get("contents") or ():
        content = message.get("content", message.get("parts"))
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    yield block["text"]


Rule = Callable[[Seen], "tuple[int, Any] | None"]


@dataclass
class ProviderFake:
    aws: tuple[str, str, str] | None = None
    rule: Rule | None = None
    requests: list[Seen] = field(default_factory=list)
    port: int = 0
    _queue: deque[tuple[int, Any]] = field(default_factory=deque)
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *replies: tuple[int, Any]) -> None:
        self._queue.extend(replies)

    async def start(self) -> ProviderFake:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> ProviderFake:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        RECEIVED_BODIES.append(raw)
        path = request.path
        kind = _kind(path)
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        seen = Seen(
            kind, request.method, path, request.raw_path.split("?")[0], request.query_string,
            {k.lower(): v for k, v in request.headers.items()}, raw, body,
        )  # fmt: skip
        self.requests.append(seen)
        if kind.startswith("bedrock") and self.aws is not None:
            access, secret, region = self.aws
            seen.signature_problem = check_request(
                request.method, seen.raw_path, seen.query, seen.headers, raw,
                access_key=access, secret_key=secret, region=region,
            )  # fmt: skip
            if seen.signature_problem:
                return web.json_response({"message": seen.signature_problem}, status=403)
        if self._queue:
            status, reply = self._queue.popleft()
        else:
            ruled = self.rule(seen) if self.rule else None
            status, reply = ruled if ruled is not None else (200, _echo(seen))
        return web.json_response(reply, status=status)


def _kind(path: str) -> str:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith(":generateContent"):
        return "gemini"
    if path.endswith("/converse"):
        return "bedrock-converse"
    if path.endswith("/invoke"):
        return "bedrock-invoke"
    if path.endswith("/messages"):
        return "anthropic"
    return "unknown"


def _echo(seen: Seen) -> Any:
    texts = seen.user_texts()
    text = f"echo: {texts[-1] if texts else ''}"
    if seen.kind == "openai":
        return bodies.chat_completion(text, model=str((seen.body or {}).get("model", "m")))
    if seen.kind in ("anthropic", "bedrock-invoke"):
        return bodies.anthropic_message(text)
    if seen.kind == "gemini":
        return bodies.gemini_reply(text)
    if seen.kind == "bedrock-converse":
        return bodies.converse_reply(text)
    return {"error": {"message": "no such route"}}


@contextmanager
def provider_fake_in_thread(**options: Any) -> Iterator[ProviderFake]:
    """A started fake on its own loop in a thread (for tests driving a server process)."""
    import threading

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    fake = ProviderFake(**options)
    asyncio.run_coroutine_threadsafe(fake.start(), loop).result(10)
    try:
        yield fake
    finally:
        asyncio.run_coroutine_threadsafe(fake.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
