
"""Concurrent chats and token budgets per key, on a real server whose networks talk to the
fake LLM: refusals on gRPC and HTTP while another key is served."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import grpc
import pytest

from tests.fakes.fake_llm import Reply
from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import start_server
from tests.support.waits import until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

KEYS = {
    "keys": [
        {"name": "busy", "key": "busy-key", "limits": {"concurrent_chats": 1, "tokens_per_hour": 30}},
        {"name": "other", "key": "other-key"},
    ]
}


def _auth(key: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {key}")]


async def _http(base: str, key: str, text: str) -> tuple[int, str | None, str]:
    async with aiohttp.ClientSession() as session, session.post(
        f"{base}/api/v1/echo/streaming_chat", json=load.chat_body(text), headers={"Authorization": f"Bearer {key}"}
    ) as response:
        return response.status, response.headers.get("Retry-After"), await response.text()


async def _grpc(target: str, key: str, text: str) -> tuple[grpc.StatusCode, str]:
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.unary_stream(
            "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=lambda b: b,
        )
        try:
            async for _ in call(load.chat_request(text), metadata=[("agent-name", "echo"), *_auth(key)], timeout=15):
                pass
        except grpc.aio.AioRpcError as error:
            return error.code(), error.details() or ""
    return grpc.StatusCode.OK, ""


def test_concurrent_chats_and_token_budget_per_key_on_grpc_and_http(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEYS))
    with FakeInThread() as fake:
        env = {**override_env(fake), "AGENT_API_KEYS_FILE": str(keys)}
        with start_server(env=env, http=True) as server:

            async def scenario() -> None:
                # The slow chat holds busy's one place while its LLM reply is held.
                fake.enqueue(Reply.hold(Reply.answer("slow", usage=(5, 5))))
                slow = asyncio.create_task(_grpc(server.grpc_target, "busy-key", "slow one"))
                assert await until(lambda: fake.held == 1 or slow.done()), "it never reached its LLM"
                assert not slow.done(), await slow
                status, retry_after, body = await _http(server.http_base, "busy-key", "second")
                assert status == 429 and retry_after == "1", (status, retry_after, body)
                assert "in progress" in json.loads(body)["message"]
                code, details = await _grpc(server.grpc_target, "busy-key", "third")
                assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "in progress" in details
                assert (await _http(server.http_base, "other-key", "meanwhile"))[0] == 200
                fake.release()
                assert await slow == (grpc.StatusCode.OK, "")
                # 10 tokens spent of 30; a chat spending 40 crosses the budget mid-way...
                fake.enqueue(Reply.answer("expensive", usage=(30, 10)))
                code, details = await _grpc(server.grpc_target, "busy-key", "expensive")
                assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "was crossed during this chat" in details
                # ...and the next is refused before it starts, saying which budget and when it resets.
                before = len(fake.requests)
                status, retry_after, body = await _http(server.http_base, "busy-key", "more")
                message = json.loads(body)["message"]
                assert status == 429 and retry_after is not None and int(retry_after) <= 3600, (status, body)
                assert "hourly LLM token budget (30 tokens) is spent" in message and "resets at" in message
                assert len(fake.requests) == before  # no LLM call for a refused chat
                assert (await _http(server.http_base, "other-key", "still fine"))[0] == 200

            asyncio.run(asyncio.wait_for(scenario(), 40))
