"""Per-caller rate limits: the token bucket with a controllable clock, and the refusals
(RESOURCE_EXHAUSTED + retry-after / 429 + Retry-After) on gRPC and HTTP of a real server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.core.rate_limits import CallerLimits, RateLimited, RateLimiter
from tests.support import grpc_calls as calls
from tests.support.servers import INVOKERS, ServerProcess, invoker_env, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

# -- the limiter ---------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_refuses_with_retry_after_and_refills_with_time() -> None:
    clock = Clock()
    decisions: list[tuple[str, bool]] = []
    limits = CallerLimits(chats=6, period_seconds=60, burst=2)
    limiter = RateLimiter(limits, clock, lambda caller, allowed: decisions.append((caller, allowed)))
    for _ in range(2):
        with limiter.chat("a"):
            pass
    with pytest.raises(RateLimited) as refused:
        with limiter.chat("a"):
            pass
    assert refused.value.retry_after == 10  # one chat per 10 s
    assert "6 chats per 60 s" in refused.value.message
    with limiter.chat("b"):  # another caller is unaffected
        pass
    clock.now += 9.5
    with pytest.raises(RateLimited) as refused:
        with limiter.chat("a"):
            pass
    assert refused.value.retry_after == 1
    clock.now += 0.5
    with limiter.chat("a"):
        pass
    assert decisions.count(("a", False)) == 2 and decisions.count(("a", True)) == 3


def test_concurrent_chats_per_caller() -> None:
    limiter = RateLimiter(CallerLimits(concurrent_chats=1), Clock())
    with limiter.chat("a"):
        with pytest.raises(RateLimited, match="1 chats in progress"):
            with limiter.chat("a"):
                pass
        with limiter.chat("b"):
            pass
    with limiter.chat("a"):  # the place is given back when the chat ends
        pass


def test_a_key_s_own_limits_win_and_bad_limits_are_refused() -> None:
    limiter = RateLimiter(CallerLimits(chats=1), Clock())
    for _ in range(3):
        with limiter.chat("generous", CallerLimits(chats=100)):
            pass
    with pytest.raises(ConfigurationError, match="unknown limit 'chat'"):
        CallerLimits.parse("keys[0]", {"chat": 3})
    with pytest.raises(ConfigurationError, match="must be a number"):
        CallerLimits.parse("keys[0]", {"chats": "many"})
    with pytest.raises(ConfigurationError, match="must be positive"):
        CallerLimits.parse("keys[0]", {"period_seconds": 0})
    assert CallerLimits.from_env({"AGENT_RATE_LIMIT_CHATS": "5"}).chats == 5


# -- on the wire ---------------------------------------------------------------------------

KEYS = {
    "keys": [
        {"name": "limited", "key": "limited-key", "limits": {"chats": 2, "period_seconds": 3600}},
        {"name": "other", "key": "other-key"},
    ]
}


@pytest.fixture(scope="module", params=INVOKERS)
def limited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    path: Path = tmp_path_factory.mktemp("keys") / "keys.json"
    path.write_text(json.dumps(KEYS))
    env = {"AGENT_API_KEYS_FILE": str(path), **invoker_env(request.param)}
    with start_server(env=env, http=True) as server:
        yield server


def _grpc_chat(server: ServerProcess, key: str) -> tuple[grpc.StatusCode, dict[str, str]]:
    with grpc.insecure_channel(server.grpc_target) as channel:
        try:
            calls.streaming_chat(channel, "echo", calls.chat_request("hi"), qualified=True,
                                 metadata=[("authorization", f"Bearer {key}")])
        except grpc.RpcError as error:
            trailers = {k: v for k, v in (error.trailing_metadata() or ()) if isinstance(v, str)}  # type: ignore[attr-defined]
            return error.code(), trailers  # type: ignore[attr-defined]
    return grpc.StatusCode.OK, {}


async def _http_chat(server: ServerProcess, headers: dict[str, str], source: str = "127.0.0.1") -> (
    tuple[int, str | None, str]
):
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(f"{server.http_base}/api/v1/echo/streaming_chat",
                                json={"user_message": {"text": "hi"}}, headers=headers) as response:
            return response.status, response.headers.get("Retry-After"), await response.text()


def test_a_key_over_its_rate_is_refused_on_grpc_and_http_and_others_are_not(limited: ServerProcess) -> None:
    assert _grpc_chat(limited, "limited-key")[0] == grpc.StatusCode.OK
    status, _, _ = _http(limited, {"Authorization": "Bearer limited-key"})
    assert status == 200
    code, trailers = _grpc_chat(limited, "limited-key")
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert 1700 <= int(trailers["retry-after"]) <= 1800  # 2 per hour: one more in 30 minutes
    status, retry_after, body = _http(limited, {"Authorization": "Bearer limited-key"})
    assert status == 429 and retry_after is not None and int(retry_after) > 1700, (status, retry_after, body)
    assert "rate limit" in json.loads(body)["message"]
    # Another key is unaffected, on both routes.
    assert _grpc_chat(limited, "other-key")[0] == grpc.StatusCode.OK
    assert (_http(limited, {"Authorization": "Bearer other-key"}))[0] == 200
    metrics = asyncio.run(_metrics(limited))
    assert 'neuro_san_rate_limit_decisions_total{caller="key:' in metrics
    assert "limited-key" not in metrics


def _http(server: ServerProcess, headers: dict[str, str], source: str = "127.0.0.1") -> tuple[int, str | None, str]:
    return asyncio.run(_http_chat(server, headers, source))


async def _metrics(server: ServerProcess) -> str:
    async with aiohttp.ClientSession() as session, session.get(f"{server.http_base}/metrics") as response:
        return await response.text()


def test_without_keys_each_client_address_has_its_own_limit() -> None:
    with start_server(env={"AGENT_RATE_LIMIT_CHATS": "1", "AGENT_RATE_LIMIT_PERIOD_SECONDS": "600"},
                      http=True) as server:
        assert (_http(server, {}))[0] == 200
        status, retry_after, _ = _http(server, {})
        assert status == 429 and retry_after is not None
        # A forged client address is not believed: the gateway's own comes last.
        assert (_http(server, {"Grpc-Metadata-X-Neuro-San-Client": "10.9.9.9"}))[0] == 429
        assert (_http(server, {}, source="127.0.0.2"))[0] == 200
        # gRPC from the same address is the same caller (its peer address): refused too.
        code, trailers = _grpc_chat(server, "none")
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and int(trailers["retry-after"]) > 500
