"""Long calls on a real server: keep-alive progress during an LLM stall, and client
deadlines that end the call and drop the LLM connection.
"""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import grpc
from neuro_san.api.grpc import chat_pb2

from tests.fakes.fake_llm import Reply
from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import start_server

KEEPALIVE = 0.3
STALL = 1.6


def test_keepalive_sends_empty_progress_during_a_stall_over_grpc_and_http() -> None:
    with FakeInThread() as fake:
        env = {**override_env(fake), "AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS": str(KEEPALIVE)}
        with start_server(env=env, http=True) as server:

            async def scenario() -> None:
                fake.enqueue(Reply.stall(STALL, then=Reply.answer("after the stall")))
                async with grpc.aio.insecure_channel(server.grpc_target) as channel:
                    arrivals: list[tuple[float, chat_pb2.ChatMessage]] = []
                    call = load.grpc_stream(channel, "echo", load.chat_request("stall please"), timeout=15)
                    async for response in call:
                        arrivals.append((time.monotonic(), response.response))
                    quick = [r async for r in load.grpc_stream(channel, "echo", load.chat_request("quick"))]
                    assert [r.response.text for r in quick] == ["quick"]  # nothing to keep alive
                *progress, (_, final) = arrivals
                assert final.type == chat_pb2.ChatMessage.AGENT_FRAMEWORK and final.text == "after the stall"
                assert len(progress) >= int(STALL / KEEPALIVE) - 1, progress
                for _, message in progress:
                    assert message.type == chat_pb2.ChatMessage.AGENT_PROGRESS and not message.text, message
                gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:], strict=False)]
                assert max(gaps) < KEEPALIVE * 2.5, f"the stream went quiet: {gaps}"

                fake.enqueue(Reply.stall(STALL, then=Reply.answer("after the HTTP stall")))
                async with aiohttp.ClientSession() as session, session.post(
                    f"{server.http_base}/api/v1/echo/streaming_chat", json=load.chat_body("stall over http")
                ) as response:
                    assert response.status == 200
                    lines = [json.loads(line) async for line in response.content]
                *progress_lines, last = lines
                assert last["response"]["text"] == "after the HTTP stall"
                assert len(progress_lines) >= int(STALL / KEEPALIVE) - 1, lines
                keepalive = {"response": {"type": "AGENT_PROGRESS", "text": ""}}  # neuro-san 0.7.15's frame
                assert all(line == keepalive for line in progress_lines), lines

            asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_client_deadline_ends_the_call_and_drops_the_llm_connection() -> None:
    with FakeInThread() as fake:
        fake.rule = load.fixed_rule(Reply.stall(10.0))
        with start_server(env=override_env(fake), http=True) as server:

            async def scenario() -> None:
                async with grpc.aio.insecure_channel(server.grpc_target) as channel:
                    started = time.monotonic()
                    outcome = await load.grpc_chat(channel, "echo", "deadline over grpc", timeout=0.5)
                    assert outcome.code == "DEADLINE_EXCEEDED", outcome
                    assert time.monotonic() - started < 2.0
                assert await load.async_wait_until(lambda: fake.handlers_cancelled == 1, 5), "the LLM call went on"
                assert await load.async_wait_until(lambda: fake.open_connections == 0, 5)

                async with aiohttp.ClientSession() as session:
                    started = time.monotonic()
                    async with session.post(
                        f"{server.http_base}/api/v1/echo/streaming_chat",
                        json=load.chat_body("deadline over http"),
                        headers={"Grpc-Timeout": "500m"},
                    ) as response:
                        outcome = load.ChatOutcome("http", http_status=response.status)
                        load.read_http_lines(outcome, await response.read())
                    assert outcome.code == "DEADLINE_EXCEEDED" and outcome.http_status == 504, outcome
                    assert time.monotonic() - started < 2.0
                assert await load.async_wait_until(lambda: fake.handlers_cancelled == 2, 5), "the LLM call went on"
                assert await load.async_wait_until(lambda: fake.open_connections == 0, 5)
                assert fake.request_count == 2

            asyncio.run(asyncio.wait_for(scenario(), 30))
            assert server.process.poll() is None
