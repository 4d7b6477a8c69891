"""Per-caller rate limits and token budgets over the MCP (/mcp) and A2A (/a2a/...)
front-ends, on a real ``neuro-san serve`` whose networks talk to the fake LLM: a refused
chat is HTTP 429 with ``Retry-After`` and a JSON-RPC error carrying the service's message
(which limit, when it resets), as REST answers it; another key is served meanwhile."""

from __future__ import annotations

import asyncio
import json
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client.errors import A2AClientError
from a2a.types import TaskState
from mcp.shared.exceptions import MCPError

from tests.a2a_support import a2a_client, send, user_message
from tests.fakes.fake_llm import FakeLlmServer, Reply
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.mcp import mcp_client
from tests.support.servers import ServerProcess, start_server
from tests.support.waits import wait_until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

#: The JSON-RPC code of a caller's refusal (neuro_san.core.errors.JSONRPC_CODE_BY_HTTP_STATUS).
RATE_LIMITED = -32029
HOUR = 3600

KEYS = {
    "keys": [
        {"name": name, "key": f"{name}-key", "limits": limits}
        for name, limits in (
            ("mcp-rate", {"chats": 2, "period_seconds": HOUR}),
            ("mcp-budget", {"tokens_per_hour": 5}),
            ("a2a-rate", {"chats": 2, "period_seconds": HOUR}),
            ("a2a-budget", {"tokens_per_hour": 5}),
            ("other", {}),
        )
    ]
}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    keys: Path = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps(KEYS))
    with FakeInThread() as fake:
        env = {**override_env(fake), "AGENT_API_KEYS_FILE": str(keys)}
        with start_server(env=env, http=True) as started:
            yield started


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _retry_after(response: httpx.Response) -> int:
    value = response.headers.get("Retry-After")
    assert value is not None and value.isdigit(), (response.status_code, dict(response.headers), response.text)
    return int(value)


# ---- MCP -------------------------------------------------------------------------------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def _mcp_call(server: ServerProcess, key: str, text: str, progress: bool = False) -> httpx.Response:
    params: dict[str, Any] = {"name": "echo", "arguments": {"user_message": {"text": text}}}
    if progress:  # asks for an SSE stream of progress notifications
        params["_meta"] = {"progressToken": "p1"}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    return httpx.post(f"{server.http_base}/mcp", json=body, headers={**MCP_HEADERS, **_auth(key)}, timeout=30)


def _refused_envelope(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 429, (response.status_code, response.text)
    assert response.headers["Content-Type"].startswith("application/json")
    envelope = response.json()
    assert envelope["id"] is not None and envelope["error"]["code"] == RATE_LIMITED, envelope
    return dict(envelope["error"])


def test_mcp_a_key_over_its_rate_is_refused_with_429_and_retry_after(keyed: ServerProcess) -> None:
    async def with_sdk() -> None:
        async with mcp_client(keyed, key="mcp-rate-key") as client:
            for turn in range(2):
                result = await client.call_tool("echo", {"user_message": {"text": f"hello {turn}"}})
                assert not result.is_error, result
            with pytest.raises(MCPError) as refused:
                await client.call_tool("echo", {"user_message": {"text": "one too many"}})
            assert refused.value.error.code == RATE_LIMITED
            assert "rate limit of 2 chats per 3600 s" in refused.value.error.message

    asyncio.run(with_sdk())
    for progress in (False, True):  # a progress stream that has not started is refused the same way
        response = _mcp_call(keyed, "mcp-rate-key", "again", progress=progress)
        error = _refused_envelope(response)
        assert "rate limit of 2 chats per 3600 s" in error["message"] and "retry in" in error["message"]
        assert 0 < _retry_after(response) <= HOUR
        assert error["data"]["retry_after_seconds"] == _retry_after(response)
        assert error["data"]["reason"] == "RATE_LIMITED"
    served = _mcp_call(keyed, "other-key", "meanwhile")
    assert served.status_code == 200 and "error" not in served.json(), served.text
    assert served.json()["result"]["isError"] is False


def test_mcp_a_spent_token_budget_is_refused_naming_the_budget_and_its_reset(keyed: ServerProcess) -> None:
    first = _mcp_call(keyed, "mcp-budget-key", "spend more than five tokens")  # crosses the budget mid-way
    assert first.status_code == 429 and "was crossed during this chat" in first.json()["error"]["message"]
    response = _mcp_call(keyed, "mcp-budget-key", "more")
    error = _refused_envelope(response)
    assert "hourly LLM token budget (5 tokens) is spent" in error["message"] and "resets at" in error["message"]
    assert 0 < _retry_after(response) <= HOUR
    assert _mcp_call(keyed, "other-key", "meanwhile").status_code == 200


# ---- A2A -------------------------------------------------------------------------------


def _a2a_send(server: ServerProcess, key: str, text: str, method: str = "SendMessage") -> httpx.Response:
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}
    body = {"jsonrpc": "2.0", "id": 11, "method": method, "params": {"message": message}}
    headers = {"A2A-Version": "1.0", **_auth(key)}
    return httpx.post(f"{server.http_base}/a2a/echo", json=body, headers=headers, timeout=30)


def test_a2a_a_key_over_its_rate_is_refused_with_429_and_retry_after(keyed: ServerProcess) -> None:
    url = f"{keyed.http_base}/a2a/echo"

    async def with_sdk() -> None:
        async with a2a_client(url, streaming=False, headers=_auth("a2a-rate-key")) as client:
            for turn in range(2):
                events = await send(client, user_message(f"hello {turn}"))
                assert events[-1].task.status.state == TaskState.TASK_STATE_COMPLETED
            # The SDK's client reports the HTTP status, not the body (the raw POST below reads it).
            with pytest.raises(A2AClientError, match="HTTP Error 429"):
                await send(client, user_message("one too many"))
        # A stream has started before the chat is refused: its task fails, saying why.
        async with a2a_client(url, streaming=True, headers=_auth("a2a-rate-key")) as client:
            events = await send(client, user_message("streamed"))
            final = [e for e in events if e.HasField("status_update")][-1].status_update.status
            assert final.state == TaskState.TASK_STATE_FAILED
            assert "rate limit of 2 chats per 3600 s" in final.message.parts[0].text

    asyncio.run(with_sdk())
    response = _a2a_send(keyed, "a2a-rate-key", "again")
    assert response.status_code == 429, response.text
    envelope = response.json()
    assert envelope["id"] == 11 and envelope["error"]["code"] == RATE_LIMITED
    assert "rate limit of 2 chats per 3600 s" in envelope["error"]["message"]
    assert 0 < _retry_after(response) <= HOUR
    # The HTTP+JSON binding answers as the REST API does: 429, Retry-After, a Status body.
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "over REST"}]}
    rest = httpx.post(f"{url}/rest/message:send", json={"message": message}, timeout=30,
                      headers={"A2A-Version": "1.0", **_auth("a2a-rate-key")})
    assert rest.status_code == 429, rest.text
    assert "rate limit of 2 chats per 3600 s" in rest.json()["error"]["message"]
    assert 0 < _retry_after(rest) <= HOUR
    served = _a2a_send(keyed, "other-key", "meanwhile")
    assert served.status_code == 200, served.text
    assert served.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a2a_a_spent_token_budget_is_refused_naming_the_budget_and_its_reset(keyed: ServerProcess) -> None:
    first = _a2a_send(keyed, "a2a-budget-key", "spend more than five tokens")
    assert first.status_code == 429 and "was crossed during this chat" in first.json()["error"]["message"]
    response = _a2a_send(keyed, "a2a-budget-key", "more")
    assert response.status_code == 429, response.text
    message = response.json()["error"]["message"]
    assert "hourly LLM token budget (5 tokens) is spent" in message and "resets at" in message
    assert 0 < _retry_after(response) <= HOUR
    assert _a2a_send(keyed, "other-key", "meanwhile").status_code == 200


# ---- a busy server, and a refusal after the response started --------------------------


@pytest.fixture(scope="module")
def busy() -> Iterator[tuple[FakeLlmServer, ServerProcess]]:
    """One chat at a time for the whole server; streams send a heartbeat every 0.3 s."""
    with FakeInThread() as fake, tempfile.TemporaryDirectory() as folder:
        keys = Path(folder) / "keys.json"
        keys.write_text(json.dumps(KEYS))
        env = {**override_env(fake), "AGENT_API_KEYS_FILE": str(keys), "AGENT_MAX_CONCURRENT_REQUESTS": "1",
               "AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS": "0.3"}
        with start_server(env=env, http=True) as started:
            yield fake, started


def test_a_server_at_its_concurrency_cap_is_503_not_429_on_mcp_and_a2a(
    busy: tuple[FakeLlmServer, ServerProcess],
) -> None:
    fake, server = busy
    # The chat holding the one place waits on its LLM call until both refused calls are
    # answered (the A2A one loads the A2A SDK first: seconds on a loaded machine).
    fake.enqueue(Reply.hold())
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(_mcp_call, server, "other-key", "holds the one place")
        try:
            assert wait_until(lambda: fake.held == 1 or holder.done()), "the holding chat never reached its LLM"
            assert not holder.done(), holder.result().text
            for response in (_mcp_call(server, "mcp-rate-key", "busy?"), _a2a_send(server, "a2a-rate-key", "busy?")):
                assert response.status_code == 503, response.text
                error = response.json()["error"]
                assert error["code"] == -32002 and "AGENT_MAX_CONCURRENT_REQUESTS" in error["message"], error
                assert error["data"]["reason"] == "TOO_MANY_REQUESTS"
        finally:
            fake.release()
        assert holder.result().status_code == 200


def test_mcp_a_refusal_after_the_stream_started_is_a_json_rpc_error_event(
    busy: tuple[FakeLlmServer, ServerProcess],
) -> None:
    fake, server = busy
    fake.enqueue(Reply.stall(1.0))  # heartbeats start the SSE stream before the budget is crossed
    response = _mcp_call(server, "mcp-budget-key", "spend more than five tokens", progress=True)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    assert response.text.startswith(": keep-alive"), response.text
    events = [json.loads(line[len("data: "):]) for line in response.text.splitlines() if line.startswith("data: ")]
    *progress, last = events
    assert all(event["method"] == "notifications/progress" for event in progress), events
    assert last["id"] == 7 and last["error"]["code"] == RATE_LIMITED, last
    assert "was crossed during this chat" in last["error"]["message"]
    assert last["error"]["data"]["retry_after_seconds"] > 0
