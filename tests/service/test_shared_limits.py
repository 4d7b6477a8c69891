"""Rate limits shared by replicas through a real redis-server (AGENT_LIMITS_REDIS_URL),
and the fall-back to per-replica limits when Redis goes away."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from tests.support import grpc_calls as calls
from tests.support.cluster import RedisProcess
from tests.support.servers import ServerProcess, start_server
from tests.support.waits import until

pytestmark = pytest.mark.slow  # redis-server and two servers (conftest's redis skips without it)

KEYS = {"keys": [{"name": "limited", "key": "limited-key", "limits": {"chats": 3, "period_seconds": 3600}}]}


def _chat(server: ServerProcess) -> grpc.StatusCode:
    with grpc.insecure_channel(server.grpc_target) as channel:
        try:
            calls.streaming_chat(channel, "echo", calls.chat_request("hi"), qualified=True,
                                 metadata=[("authorization", "Bearer limited-key")])
        except grpc.RpcError as error:
            return error.code()  # type: ignore[attr-defined,no-any-return]
    return grpc.StatusCode.OK


# AGENT_REDIS_URL alone (the shared front-end state) shares the limits too: one Redis by default
# (without the server reading it for limits, the 4th chat would pass: 3 is per replica).
@pytest.mark.parametrize("variable", ["AGENT_LIMITS_REDIS_URL", "AGENT_REDIS_URL"])
def test_two_replicas_share_a_key_s_limit_and_survive_a_redis_outage(
    redis: RedisProcess, tmp_path: Path, variable: str
) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEYS))
    env = {"AGENT_API_KEYS_FILE": str(keys), variable: redis.url}
    with start_server(env=env) as a, start_server(env=env) as b:
        # 3 chats per hour for the key, across both replicas.
        assert [_chat(a), _chat(b), _chat(a)] == [grpc.StatusCode.OK] * 3
        assert _chat(b) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _chat(a) == grpc.StatusCode.RESOURCE_EXHAUSTED
        # Redis goes away mid-test: each replica falls back to its own limits.
        redis.stop()
        assert _chat(a) == grpc.StatusCode.OK
        assert _chat(b) == grpc.StatusCode.OK
        for replica in (a, b):
            assert "limits are per replica" in replica.log() and "WARNING" in replica.log()
        assert [_chat(a) for _ in range(3)][-1] == grpc.StatusCode.RESOURCE_EXHAUSTED  # a's own bucket


def test_token_budgets_are_shared_through_redis(redis: RedisProcess) -> None:
    import asyncio

    from neuro_san.core.rate_limits import CallerLimits, RateLimiter
    from neuro_san.core.token_budgets import TokenBudgetExhausted, TokenLedger
    from neuro_san.service.limits_gate import LocalGate, RedisGate

    limits = CallerLimits(tokens_per_hour=50)

    async def scenario() -> None:
        one, two = (RedisGate(redis.url, LocalGate(RateLimiter(), TokenLedger())) for _ in range(2))
        try:
            async with one.chat("key:k", limits) as on_usage:
                on_usage(30)
            # The INCRBY is sent in the background: wait until the gate has sent it.
            assert await until(lambda: not one._pending)
            with pytest.raises(TokenBudgetExhausted, match="was crossed during this chat"):
                async with two.chat("key:k", limits) as on_usage:  # the other replica sees the 30
                    on_usage(30)
            assert await until(lambda: not two._pending)
            spent = r"hourly LLM token budget \(50 tokens\) is spent; it resets at"
            with pytest.raises(TokenBudgetExhausted, match=spent):
                async with one.chat("key:k", limits):
                    pass
            async with two.chat("key:other", limits):  # another caller is unaffected
                pass
        finally:
            await one.close()
            await two.close()

    asyncio.run(scenario())
