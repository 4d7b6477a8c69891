
"""Long calls on a real server: keep-alive progress during an LLM stall, and client
deadlines that end the call and drop the LLM connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import grpc
import pytest
from neuro_san.api.grpc import chat_pb2

from tests.fakes.fake_llm import Reply
from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

KEEPALIVE = 0.3
#: Keep-alives to see while the LLM call is held: more than one, so they are seen to repeat.
KEEPALIVES = 3


def test_keepalive_sends_empty_progress_during_a_stall_over_grpc_and_http() -> None:
    # The LLM reply is held until the test has seen KEEPALIVES keep-alives: they can only
    # have been sent during the stall, whatever the machine's speed (their exact interval is
    # the benchmark's business). 10 s at most, so a server that sends none fails the test.
    with FakeInThread() as fake:
        env = {**override_env(fake), "AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS": str(KEEPALIVE)}
        with start_server(env=env, http=True) as server:

            async def scenario() -> None:
                fake.enqueue(Reply.hold(Reply.answer("after the stall"), seconds=10))
                messages: list[chat_pb2.ChatMessage] = []
                held: tuple[int, int] | None = None
                async with grpc.aio.insecure_channel(server.grpc_target) as channel:
                    call = load.grpc_stream(channel, "echo", load.chat_request("stall please"), timeout=15)
                    async for response in call:
                        messages.append(response.response)
                        if len(messages) == KEEPALIVES:
                            held = (fake.held, fake.answered)
                            fake.release()
                    quick = [r async for r in load.grpc_stream(channel, "echo", load.chat_request("quick"))]
                    assert [r.response.text for r in quick] == ["quick"]  # nothing to keep alive
                assert held == (1, 0), "keep-alives while the LLM call is held"
                *progress, final = messages
                assert final.type == chat_pb2.ChatMessage.AGENT_FRAMEWORK and final.text == "after the stall"
                assert len(progress) >= KEEPALIVES, progress
                for message in progress:
                    assert message.type == chat_pb2.ChatMessage.AGENT_PROGRESS and not message.text, message

                answered = fake.answered
                fake.enqueue(Reply.hold(Reply.answer("after the HTTP stall"), seconds=10))
                lines: list[Any] = []
                held = None
                async with aiohttp.ClientSession() as session, session.post(
                    f"{server.http_base}/api/v1/echo/streaming_chat", json=load.chat_body("stall over http")
                ) as response:
                    assert response.status == 200
                    async for line in response.content:
                        lines.append(json.loads(line))
                        if len(lines) == KEEPALIVES:
                            held = (fake.held, fake.answered - answered)
                            fake.release()
                assert held == (1, 0), "keep-alives while the LLM call is held"
                *progress_lines, last = lines
                assert last["response"]["text"] == "after the HTTP stall", lines
                assert len(progress_lines) >= KEEPALIVES, lines
                keepalive = {"response": {"type": "AGENT_PROGRESS", "text": ""}}  # neuro-san 0.7.15's frame
                assert all(line == keepalive for line in progress_lines), lines

            asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_client_deadline_ends_the_call_and_drops_the_llm_connection() -> None:
    with FakeInThread() as fake:
        # Every LLM reply is held (30 s at most): only the deadline can end these calls.
        fake.rule = load.fixed_rule(Reply.hold(seconds=30))
        with start_server(env=override_env(fake), http=True) as server:

            async def scenario() -> None:
                async with grpc.aio.insecure_channel(server.grpc_target) as channel:
                    outcome = await load.grpc_chat(channel, "echo", "deadline over grpc", timeout=0.5)
                    assert outcome.code == "DEADLINE_EXCEEDED", outcome
                    assert fake.answered == 0  # the deadline ended it while the LLM call was held
                assert await load.async_wait_until(lambda: fake.handlers_cancelled == 1, 10), "the LLM call went on"
                assert await load.async_wait_until(lambda: fake.open_connections == 0, 10)

                async with aiohttp.ClientSession() as session:
                    async with session.post(
                        f"{server.http_base}/api/v1/echo/streaming_chat",
                        json=load.chat_body("deadline over http"),
                        headers={"Grpc-Timeout": "500m"},
                    ) as response:
                        outcome = load.ChatOutcome("http", http_status=response.status)
                        load.read_http_lines(outcome, await response.read())
                    assert outcome.code == "DEADLINE_EXCEEDED" and outcome.http_status == 504, outcome
                    assert fake.answered == 0  # the deadline ended it while the LLM call was held
                assert await load.async_wait_until(lambda: fake.handlers_cancelled == 2, 10), "the LLM call went on"
                assert await load.async_wait_until(lambda: fake.open_connections == 0, 10)
                assert fake.request_count == 2

            asyncio.run(asyncio.wait_for(scenario(), 30))
            assert server.process.poll() is None
