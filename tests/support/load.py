"""Load and fault helpers for the reliability suite and the soak run.

Chats are made the way real clients make them, against real server processes on
loopback: ``grpc.aio`` on the qualified route (agent in the ``agent-name`` metadata) and
aiohttp against the gateway's JSON-lines stream. Each returns a :class:`ChatOutcome`
that says how the stream ended, so a test can assert that *every* stream ended with an
answer or a clear error, and never hung.

Also here: fault rules for the fake LLM (each chat gets a distinct user text, so the
fake's requests can be grouped per chat), and the server's resident memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from google.protobuf import json_format
from neuro_san.api.grpc import agent_pb2, chat_pb2

from tests.fakes.fake_llm import RecordedRequest, Reply, Rule
from tests.support import waits
from tests.support.servers import ROOT
from tests.support.waits import STEP

QUALIFIED_CHAT = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat"
#: The message ``service/errors.py`` gives for an exception it did not expect: a bug.
UNEXPECTED = "internal error; the server log has the details"


@dataclass
class ChatOutcome:
    """How one chat ended: an answer, or an error with a code and a message."""

    transport: str  # "grpc" or "http"
    text: str | None = None
    #: The gRPC status name (``UNAVAILABLE`` …), also for an HTTP error status or line.
    code: str | None = None
    message: str = ""
    #: The HTTP status, for an HTTP chat that got one.
    http_status: int | None = None
    #: The last response's chat_context (as a dict), for continuations.
    chat_context: dict[str, Any] | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.code is None and self.text is not None

    @property
    def clear(self) -> bool:
        """An answer, or an error that says what happened (a code, a real message)."""
        if self.ok:
            return True
        return bool(self.code) and self.code != "OK" and bool(self.message.strip()) and UNEXPECTED not in self.message


def _code_name(code: int | str | None) -> str:
    if isinstance(code, str):
        return code
    for status in grpc.StatusCode:
        if status.value[0] == code:
            return status.name
    return f"CODE_{code}"


def chat_request(
    text: str, chat_context: dict[str, Any] | None = None, maximal: bool = False
) -> agent_pb2.ChatRequest:
    request = agent_pb2.ChatRequest(user_message=chat_pb2.ChatMessage(type=chat_pb2.ChatMessage.HUMAN, text=text))
    if chat_context is not None:
        json_format.ParseDict(chat_context, request.chat_context)
    if maximal:
        request.chat_filter.chat_filter_type = agent_pb2.MAXIMAL
    return request


def chat_body(text: str, chat_context: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"user_message": {"text": text}}
    if chat_context is not None:
        body["chat_context"] = chat_context
    return body


def grpc_stream(
    channel: grpc.aio.Channel, agent: str, request: agent_pb2.ChatRequest, timeout: float | None = 30.0
) -> grpc.aio.UnaryStreamCall:
    call = channel.unary_stream(
        QUALIFIED_CHAT,
        request_serializer=agent_pb2.ChatRequest.SerializeToString,
        response_deserializer=agent_pb2.ChatResponse.FromString,
    )
    return call(request, metadata=[("agent-name", agent)], timeout=timeout)


async def grpc_chat(
    channel: grpc.aio.Channel,
    agent: str,
    text: str,
    chat_context: dict[str, Any] | None = None,
    timeout: float | None = 30.0,  # noqa: ASYNC109 - the call's gRPC deadline
    maximal: bool = False,
) -> ChatOutcome:
    """One StreamingChat over gRPC, read to its end."""
    started = time.monotonic()
    outcome = ChatOutcome("grpc")
    last: agent_pb2.ChatResponse | None = None
    try:
        async for response in grpc_stream(channel, agent, chat_request(text, chat_context, maximal), timeout):
            last = response
    except grpc.aio.AioRpcError as error:
        outcome.code, outcome.message = error.code().name, error.details() or ""
    else:
        if last is not None:
            outcome.text = last.response.text
            context = json_format.MessageToDict(last.response.chat_context, preserving_proto_field_name=True)
            outcome.chat_context = context or None
        else:
            outcome.code, outcome.message = "OK", "the stream ended without a message"
    outcome.seconds = time.monotonic() - started
    return outcome


async def http_chat(
    session: aiohttp.ClientSession,
    base: str,
    agent: str,
    text: str,
    chat_context: dict[str, Any] | None = None,
    timeout: float = 30.0,  # noqa: ASYNC109 - the HTTP client's own timeout
) -> ChatOutcome:
    """One streaming_chat over the gateway, read line by line to its end."""
    started = time.monotonic()
    outcome = ChatOutcome("http")
    url = f"{base}/api/v1/{agent}/streaming_chat"
    async with session.post(
        url, json=chat_body(text, chat_context), timeout=aiohttp.ClientTimeout(total=timeout)
    ) as response:
        outcome.http_status = response.status
        raw = await response.read()
    outcome.seconds = time.monotonic() - started
    read_http_lines(outcome, raw)
    return outcome


def read_http_lines(outcome: ChatOutcome, raw: bytes) -> None:
    """Fill ``outcome`` from an HTTP reply: a Status body, or JSON lines."""
    if outcome.http_status != 200:
        try:
            status = json.loads(raw)
        except ValueError:
            outcome.code, outcome.message = f"HTTP_{outcome.http_status}", raw[:200].decode(errors="replace")
            return
        outcome.code = _code_name(status.get("code")) if isinstance(status, dict) else f"HTTP_{outcome.http_status}"
        outcome.message = str(status.get("message", "")) if isinstance(status, dict) else ""
        return
    text = raw.decode()
    if not text.endswith("\n"):
        outcome.code, outcome.message = "TRUNCATED", f"the stream did not end with a newline: {text[-200:]!r}"
        return
    # Split on newlines only: str.splitlines() also splits on U+2028, U+0085… that JSON
    # strings may hold unescaped, and the fuzz test then failed on a valid stream.
    lines = [json.loads(line) for line in text.split("\n") if line.strip()]
    if not lines:
        outcome.code, outcome.message = "OK", "the stream ended without a line"
        return
    last = lines[-1]
    if "error" in last:
        outcome.code = _code_name(last["error"].get("code"))
        outcome.message = str(last["error"].get("message", ""))
        return
    response = last.get("response", {})
    outcome.text = response.get("text", "")
    outcome.chat_context = response.get("chat_context")


def summarise(outcomes: Iterable[ChatOutcome]) -> Counter[str]:
    """How many chats ended how: ``ok`` or ``<transport>:<code>``."""
    return Counter("ok" if o.ok else f"{o.transport}:{o.code}" for o in outcomes)


# -- the fake LLM's side ---------------------------------------------------------------


def requests_per_chat(requests: Sequence[RecordedRequest]) -> Counter[str]:
    """How many LLM requests the fake saw for each chat, by the chat's (distinct) user text."""
    return Counter(request.last_input_text() for request in list(requests))


class FaultRule:
    """A fake LLM rule: ``rate`` of the requests get one of ``faults``, the rest an echo.

    Thread-safe enough for a fake running on its own loop: decisions come from a seeded
    generator under a lock, and the count of each fault served is kept.
    """

    def __init__(self, faults: Sequence[tuple[str, Reply]], rate: float, seed: int = 7) -> None:
        self.faults = list(faults)
        self.rate = rate
        self.served: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            if self._random.random() >= self.rate:
                self.served["answer"] += 1
                return None
            name, reply = self._random.choice(self.faults)
            self.served[name] += 1
            return reply


def fixed_rule(reply: Reply) -> Rule:
    return lambda _request: reply


def wait_until(predicate: Callable[[], bool], within: float, step: float = STEP) -> bool:
    return waits.wait_until(predicate, within, step)


async def async_wait_until(predicate: Callable[[], bool], within: float, step: float = STEP) -> bool:
    return await waits.until(predicate, within, step)


def rss_kib(pid: int) -> int:
    """The process's resident set size (VmRSS) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def open_fds(pid: int) -> int:
    """How many file descriptors the process holds (sockets included)."""
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


# -- the standalone gateway ----------------------------------------------------------------


@dataclass
class GatewayProcess:
    process: subprocess.Popen[str]
    port: int
    output: list[str]

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return "".join(self.output)


@contextlib.contextmanager
def standalone_gateway(
    targets: Sequence[str], timeout: float = 20.0, env: dict[str, str] | None = None
) -> Iterator[GatewayProcess]:
    """``neuro-san gateway --target a,b,c --port 0`` as a subprocess, until the block ends."""
    args = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", ",".join(targets), "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT
    )
    output: list[str] = []
    found: list[int] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            match = re.search(r"gateway listening on http://[^:]+:(\d+)", line)
            if match and not found:
                found.append(int(match.group(1)))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(timeout) or not found:
            raise RuntimeError(f"the gateway did not start:\n{''.join(output)}")
        yield GatewayProcess(process, found[0], output)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
