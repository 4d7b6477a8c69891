"""The HTTP edge: retries, Retry-After, error translation, timeouts, cancellation, sessions.

Everything runs against the local fake server over real HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from neuro_san.core.errors import Code
from neuro_san.llm.errors import (
    LlmAuthError,
    LlmConnectionError,
    LlmHttpError,
    LlmMalformedReply,
    LlmNotFound,
    LlmRateLimited,
    LlmTimeout,
)
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import LlmMessage, Model
from neuro_san.llm.retry import RetryPolicy, parse_retry_after
from tests.fakes.fake_llm import FakeLlmServer, Reply, run_with_fake_llm

HELLO = [LlmMessage("user", "hello there")]


def fast_pool() -> HttpPool:
    return HttpPool(backoff_base=0.01, backoff_cap=0.02)


def make_model(fake: FakeLlmServer, pool: HttpPool, protocol: Any = "openai", **extra: Any) -> Model:
    return LlmFactory(env={}, pool=pool).create(fake.llm_config(protocol, **extra))


def test_retry_after_429_then_success_honours_the_header() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool)
        fake.enqueue(Reply.error(429, "slow down", headers={"Retry-After": "1"}))
        started = time.monotonic()
        response = await model.complete(HELLO, [])
        assert response.text == "hello there"
        assert len(fake.requests) == 2
        gap = fake.requests[1].received_at - fake.requests[0].received_at
        # Waited the advertised second, not the 10 ms backoff (lower bounds cannot flake; the
        # upper one only catches a far longer wait, with room for a loaded machine).
        assert 0.9 <= gap < 10.0, gap
        assert time.monotonic() - started >= 0.9
        await pool.aclose()

    run_with_fake_llm(body)


def test_retry_after_ms_header_is_preferred() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool)
        fake.enqueue(Reply.error(503, headers={"retry-after-ms": "300", "Retry-After": "20"}))
        assert (await model.complete(HELLO, [])).text == "hello there"
        gap = fake.requests[1].received_at - fake.requests[0].received_at
        assert 0.25 <= gap < 10.0, gap  # the 300 ms, far from the 20 s Retry-After
        await pool.aclose()

    run_with_fake_llm(body)


def test_429_exhausted_is_rate_limited_after_max_attempts() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool, max_attempts=2)
        fake.enqueue(*[Reply.error(429, "quota", headers={"Retry-After": "0"})] * 5)
        with pytest.raises(LlmRateLimited) as caught:
            await model.complete(HELLO, [])
        assert len(fake.requests) == 2
        assert caught.value.status == 429
        assert caught.value.code == Code.UNAVAILABLE  # the provider's quota: retry later
        assert "quota" in caught.value.message
        await pool.aclose()

    run_with_fake_llm(body)


@pytest.mark.parametrize("status", [500, 502, 529])
def test_5xx_exhausting_max_attempts(status: int) -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool, max_attempts=3)
        fake.enqueue(*[Reply.error(status, "provider broke")] * 5)
        with pytest.raises(LlmHttpError) as caught:
            await model.complete(HELLO, [])
        error = caught.value
        assert type(error) is LlmHttpError
        assert error.status == status and error.code == Code.UNAVAILABLE
        assert f"HTTP {status}" in error.message and "provider broke" in error.message
        assert len(fake.requests) == 3
        assert len(fake._queue) == 2  # exactly three consumed
        await pool.aclose()

    run_with_fake_llm(body)


def test_retries_are_logged_without_bodies(caplog: pytest.LogCaptureFixture) -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool)
        fake.enqueue(Reply.error(500))
        await model.complete([LlmMessage("user", "secret user text")], [])
        await pool.aclose()

    with caplog.at_level(logging.WARNING, logger="neuro_san.llm.http"):
        run_with_fake_llm(body)
    retries = [r for r in caplog.records if r.name == "neuro_san.llm.http"]
    assert len(retries) == 1 and retries[0].levelno == logging.WARNING
    text = retries[0].getMessage()
    assert "HTTP 500" in text and "attempt 2 of 3" in text
    assert "secret user text" not in text and "test-openai-key" not in text


def test_400_is_not_retried() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool)
        fake.enqueue(Reply.error(400, "bad tool schema"))
        with pytest.raises(LlmHttpError, match="bad tool schema") as caught:
            await model.complete(HELLO, [])
        assert caught.value.status == 400 and len(fake.requests) == 1
        await pool.aclose()

    run_with_fake_llm(body)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_401_is_auth_error_naming_the_env_var_without_the_key(protocol: str) -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        key = "sk-supersecret-0123456789"
        key_field = "anthropic_api_key" if protocol == "anthropic" else "openai_api_key"
        model = make_model(fake, pool, protocol, **{key_field: key})
        fake.enqueue(Reply.error(401, f"Incorrect API key provided: {key}"))
        with pytest.raises(LlmAuthError) as caught:
            await model.complete(HELLO, [])
        message = caught.value.message
        assert "API key was rejected" in message
        env_var = "ANTHROPIC_API_KEY" if protocol == "anthropic" else "OPENAI_API_KEY"
        assert env_var in message and key_field in message
        assert key not in message and "supersecret" not in message
        assert caught.value.code == Code.FAILED_PRECONDITION
        assert len(fake.requests) == 1
        await pool.aclose()

    run_with_fake_llm(body)


def test_404_names_the_model() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool, model_name="no-such-model")
        fake.enqueue(Reply.error(404, "The model does not exist"))
        with pytest.raises(LlmNotFound) as caught:
            await model.complete(HELLO, [])
        assert "no-such-model" in caught.value.message
        assert "does not exist" in caught.value.message
        await pool.aclose()

    run_with_fake_llm(body)


def test_garbage_body_is_malformed_reply() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool)
        fake.enqueue(Reply.garbage("<html>gateway says hi</html>"))
        with pytest.raises(LlmMalformedReply, match="not JSON"):
            await model.complete(HELLO, [])
        assert len(fake.requests) == 1
        await pool.aclose()

    run_with_fake_llm(body)


def test_dropped_connections_are_retried_then_connection_error() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool, max_attempts=2)
        fake.enqueue(Reply.drop())
        assert (await model.complete(HELLO, [])).text == "hello there"
        fake.enqueue(Reply.drop(), Reply.drop())
        with pytest.raises(LlmConnectionError):
            await model.complete(HELLO, [])
        assert fake.connections_dropped == 3
        await pool.aclose()

    run_with_fake_llm(body)


def test_nothing_listening_is_connection_error() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        url = fake.openai_base
        await fake.stop()
        model = LlmFactory(env={}, pool=pool).create(
            {"class": "openai", "model_name": "m", "openai_api_base": url, "max_attempts": 2}
        )
        with pytest.raises(LlmConnectionError):
            await model.complete(HELLO, [])
        await pool.aclose()

    run_with_fake_llm(body)


def test_timeout_per_attempt_is_llm_timeout() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool, request_timeout=0.3)
        fake.enqueue(Reply.hold(seconds=20))
        with pytest.raises(LlmTimeout) as caught:
            await model.complete(HELLO, [])
        # The timeout ended it, not the reply: that was still held, never answered.
        assert fake.answered == 0
        assert caught.value.code == Code.DEADLINE_EXCEEDED
        assert len(fake.requests) == 1  # timeouts are not retried
        assert await fake.wait_for(lambda: fake.handlers_cancelled == 1, within=10.0)  # and it hung up
        fake.release()
        await pool.aclose()

    run_with_fake_llm(body)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_cancellation_drops_the_connection_quickly(protocol: str) -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        model = make_model(fake, pool, protocol)
        fake.enqueue(Reply.hold())
        task = asyncio.create_task(model.complete(HELLO, []))
        assert await fake.wait_for(lambda: fake.held == 1, within=10.0)
        assert fake.open_connections == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # "Quickly" as a fact, not a time: the connection is dropped while the reply is still
        # held (only the cancel can end it) and before the pool is closed (the wait is only a
        # bound against hanging; the hold lasts far longer).
        assert await fake.wait_for(lambda: fake.handlers_cancelled == 1, within=10.0)
        assert fake.answered == 0
        assert fake.open_connections == 0
        fake.release()
        await pool.aclose()

    run_with_fake_llm(body)


def test_one_session_per_provider_and_base_url_reused() -> None:
    async def body(fake: FakeLlmServer) -> None:
        pool = fast_pool()
        factory = LlmFactory(env={}, pool=pool)
        first = factory.create(fake.llm_config(temperature=0.1))
        second = factory.create(fake.llm_config(temperature=0.9))  # another model, same base
        assert first is not second
        for _ in range(3):
            await asyncio.gather(first.complete(HELLO, []), second.complete(HELLO, []))
        assert pool.session_count == 1
        # Keep-alive: six sequential-pair calls needed at most two connections.
        assert fake.connections_opened <= 2
        claude = factory.create(fake.llm_config("anthropic"))
        await claude.complete(HELLO, [])
        assert pool.session_count == 2
        await factory.aclose()
        assert pool.session_count == 0

    run_with_fake_llm(body)


def test_parse_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after": later}, now=now) == 7.0
    assert parse_retry_after({"retry-after": "nonsense"}) is None
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({}) is None


def test_backoff_is_jittered_capped_and_retry_after_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_cap=4.0, retry_after_cap=30.0)
    rng = random.Random(7)
    delays = [policy.delay(attempt, None, rng) for attempt in (1, 2, 3, 4, 5) for _ in range(50)]
    assert all(0.0 <= d <= 4.0 for d in delays)
    assert max(policy.delay(1, None, rng) for _ in range(50)) <= 1.0
    assert len({round(d, 6) for d in delays}) > 100  # jittered, not fixed
    assert policy.delay(1, 3600.0, rng) == 30.0
    assert policy.delay(1, 2.0, rng) == 2.0
