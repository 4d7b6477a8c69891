"""A client that never reads a long stream is closed after the write deadline, and its chat
is cancelled (gateway/host/connection_guard.py, ``AGENT_HTTP_WRITE_TIMEOUT_SECONDS``).

REST (NDJSON and SSE): the network's front man asks for several calls of a sub-agent with large arguments (a few
MiB of MAXIMAL journal), then every sub-agent's LLM call is held. A raw socket with a tiny
receive buffer sends the chat and reads nothing: the server's socket fills, its writes wait
for the socket, and after the write deadline the connection is aborted, the handler and its
call cancelled, and so the held LLM calls are dropped (the fake LLM counts them cancelled).
Without the deadline the server would wait on that socket for as long as the chat runs.

MCP, A2A, the OpenAI API and AG-UI (their SSE streams): these carry steps in short, so the
chat answers a few MiB at once instead; the server's last write waits for the socket and
the connection must be aborted at the deadline, not kept open for ever.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, RecordedRequest, Reply
from tests.support.fake_thread import FakeInThread
from tests.support.servers import ServerProcess, closed_by_server, start_server
from tests.support.waits import wait_for_log, wait_until

#: Takes seconds (starts a server): not in `make test-fast`.
pytestmark = pytest.mark.slow

WRITE_SECONDS = 1.0
CALLS = 6
ARGUMENT = "x" * (700 * 1024)  # CALLS of these: several MiB journaled, past every socket buffer

NETWORK = {
    "tools": [
        {"name": "front", "function": {"description": "Answers."}, "instructions": "Answer.", "tools": ["helper"]},
        {
            "name": "helper",
            "function": {
                "description": "Helps.",
                "parameters": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
            },
            "instructions": "Help.",
        },
    ],
}


TALKY = {
    "tools": [{"name": "talker", "function": {"description": "Talks."}, "instructions": "Say a lot."}],
}
ANSWER = "y" * (5 * 1024 * 1024)  # past every socket buffer, even when a stream carries it only once (AG-UI)


def _rule(request: RecordedRequest) -> Reply:
    if "Say a lot." in json.dumps(request.messages[:1]):
        return Reply.answer(ANSWER)
    if request.body.get("tools"):  # the front man: many large calls of its sub-agent
        return Reply.calls(*(FakeToolCall("helper", {"note": f"{n}{ARGUMENT}"}) for n in range(CALLS)))
    return Reply.hold(seconds=30.0)  # the sub-agent: in flight until cancelled


@pytest.fixture(scope="module")
def backpressure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeLlmServer, ServerProcess]]:
    folder: Path = tmp_path_factory.mktemp("backpressure")
    (folder / "big.hocon").write_text(json.dumps(NETWORK))
    (folder / "talky.hocon").write_text(json.dumps(TALKY))
    (folder / "manifest.hocon").write_text(json.dumps({"big.hocon": True, "talky.hocon": True}))
    with FakeInThread() as fake:
        fake.record = False
        fake.rule = _rule
        env = {
            "AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(max_attempts=1)),
            "AGENT_HTTP_WRITE_TIMEOUT_SECONDS": str(WRITE_SECONDS),
        }
        with start_server(folder / "manifest.hocon", env=env, http=True) as server:
            yield fake, server


def _request(path: str, body: dict[str, object], accept: str, extra: str = "") -> bytes:
    raw = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\n{extra}Content-Length: {len(raw)}\r\n\r\n"
    )
    return head.encode() + raw


CHAT = {"user_message": {"text": "go"}, "chat_filter": {"chat_filter_type": "MAXIMAL"}}
CASES = {
    "rest-ndjson": ("/api/v1/big/streaming_chat", CHAT, "application/json"),
    "rest-sse": ("/api/v1/big/streaming_chat", CHAT, "text/event-stream"),
}


def _silent_client(server: ServerProcess, request: bytes) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a tiny window
    sock.connect(("127.0.0.1", server.http_port))
    sock.sendall(request)
    return sock


@pytest.mark.parametrize("case", list(CASES))
def test_a_client_that_never_reads_is_closed_and_its_chat_cancelled(
    backpressure: tuple[FakeLlmServer, ServerProcess], case: str
) -> None:
    fake, server = backpressure
    path, body, accept = CASES[case]
    cancelled_before = fake.handlers_cancelled
    sock = _silent_client(server, _request(path, body, accept))
    try:
        # Reads nothing while the server writes: its held LLM calls must be dropped.
        assert wait_until(lambda: fake.handlers_cancelled >= cancelled_before + CALLS, WRITE_SECONDS + 8), (
            f"{case}: the chat of a client that reads nothing was not cancelled "
            f"({fake.handlers_cancelled - cancelled_before} of {CALLS} LLM calls dropped, {fake.held} held)"
        )
        assert closed_by_server(sock, 5), f"{case}: the connection stayed open"
    finally:
        sock.close()
    assert "AGENT_HTTP_WRITE_TIMEOUT_SECONDS" in server.log()


def _a2a_message() -> dict[str, object]:
    return {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}


MCP_CALL = {"name": "talky", "arguments": {"user_message": {"text": "go"}}, "_meta": {"progressToken": 1}}
STREAMS = {
    "mcp-sse": _request(
        "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": MCP_CALL},
        "application/json, text/event-stream", "MCP-Protocol-Version: 2025-06-18\r\n",
    ),
    "a2a-jsonrpc-sse": _request(
        "/a2a/talky", {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": _a2a_message()},
        "text/event-stream", "A2A-Version: 1.0\r\n",
    ),
    "a2a-rest-sse": _request(
        "/a2a/talky/rest/message:stream", _a2a_message(), "text/event-stream", "A2A-Version: 1.0\r\n"
    ),
    "openai-chat-sse": _request(
        "/v1/chat/completions", {"model": "talky", "messages": [{"role": "user", "content": "go"}], "stream": True},
        "text/event-stream",
    ),
    "openai-responses-sse": _request(
        "/v1/responses", {"model": "talky", "input": "go", "stream": True}, "text/event-stream",
    ),
    "agui-sse": _request(
        "/ag-ui/talky", {"threadId": "t-1", "runId": "r-1", "state": {}, "tools": [], "context": [],
                         "forwardedProps": {}, "messages": [{"id": "m-1", "role": "user", "content": "go"}]},
        "text/event-stream",
    ),
}


@pytest.mark.parametrize("case", list(STREAMS))
def test_a_stream_its_client_never_reads_is_closed_at_the_write_deadline(
    backpressure: tuple[FakeLlmServer, ServerProcess], case: str
) -> None:
    _, server = backpressure
    logged_before = server.log().count("AGENT_HTTP_WRITE_TIMEOUT_SECONDS")
    sock = _silent_client(server, STREAMS[case])
    try:
        # Reads nothing until the server has given up on the connection.
        assert wait_for_log(server, "AGENT_HTTP_WRITE_TIMEOUT_SECONDS", WRITE_SECONDS + 8, count=logged_before + 1), (
            f"{case}: a client reading nothing was kept")
        assert closed_by_server(sock, 5), f"{case}: the connection stayed open"
    finally:
        sock.close()
