"""The per-caller gate a chat passes: token budgets, then the rate limiter.

``LocalGate`` keeps state in this process (per replica). ``RedisGate``
(``AGENT_LIMITS_REDIS_URL``) shares it between replicas through Redis: the token bucket
is one Lua script (atomic, on Redis's clock, so replicas' clocks do not matter),
concurrency and tokens are INCR/INCRBY counters. When Redis cannot be reached the gate
logs a WARNING and falls back to the local gate (limits per replica) rather than refusing
every chat; it goes back to Redis once it answers again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from neuro_san.core.errors import ConfigurationError, redis_missing_message
from neuro_san.core.rate_limits import CallerLimits, RateLimited, RateLimiter
from neuro_san.core.token_budgets import DAY, HOUR, TokenBudgetExhausted, TokenLedger

log = logging.getLogger(__name__)

UsageCallback = Callable[[int], None]


def _ignore_usage(_tokens: int) -> None:
    """What a chat with no token budget reports its usage to."""


class _Open:
    """The gate of a chat no limit applies to (the default: limits off). One shared object
    with nothing to count: the general path builds an async generator, its context manager
    and a callback for every chat only to find no limit set."""

    __slots__ = ()

    async def __aenter__(self) -> UsageCallback:
        return _ignore_usage

    async def __aexit__(self, *exc_info: object) -> None:
        return None


_OPEN = _Open()


class LocalGate:
    def __init__(self, limiter: RateLimiter, ledger: TokenLedger) -> None:
        self.limiter = limiter
        self.ledger = ledger

    def chat(self, caller: str, limits: CallerLimits | None) -> AbstractAsyncContextManager[UsageCallback]:
        """``async with gate.chat(caller, limits) as on_usage``: passes, or raises
        RateLimited / TokenBudgetExhausted."""
        rate = limits or self.limiter.default
        budget = limits or self.ledger.default
        if not (rate.chats or rate.concurrent_chats or budget.tokens_per_hour or budget.tokens_per_day):
            return _OPEN  # what the general path does when nothing is set, without its objects
        return self._limited(caller, limits)

    @asynccontextmanager
    async def _limited(self, caller: str, limits: CallerLimits | None) -> AsyncIterator[UsageCallback]:
        self.ledger.check(caller, limits)  # before the rate limiter takes a chat
        with self.limiter.chat(caller, limits):
            yield lambda tokens: self.ledger.spend(caller, limits, tokens)


_BUCKET = """
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 't', 'u')
local tokens = tonumber(state[1]) or capacity
local updated = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - updated) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'u', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(capacity / rate) + 1)
return tostring(wait)
"""

PREFIX = "neuro-san:limits:"
#: How long a concurrency counter outlives a replica that died holding places.
CONCURRENCY_TTL = 3600


class RedisGate:
    def __init__(self, url: str, local: LocalGate) -> None:
        try:
            import redis.asyncio as aioredis  # only with AGENT_LIMITS_REDIS_URL (or AGENT_REDIS_URL)
        except ModuleNotFoundError as missing:
            if missing.name != "redis":
                raise
            # Refused at start (serve prints it as one line) with the extra that brings redis.
            raise ConfigurationError(redis_missing_message("AGENT_REDIS_URL (or AGENT_LIMITS_REDIS_URL)")) from None

        self._redis: Any = aioredis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        self._errors: tuple[type[BaseException], ...] = (aioredis.RedisError, OSError, asyncio.TimeoutError)
        self._bucket = self._redis.register_script(_BUCKET)
        self.local = local
        self._degraded = False
        self._pending: set[asyncio.Task[Any]] = set()

    def _outage(self, error: BaseException) -> None:
        if not self._degraded:
            log.warning("Redis for shared limits is unreachable (%s): limits are per replica until it is back", error)
        self._degraded = True

    def _recovered(self) -> None:
        if self._degraded:
            log.warning("Redis for shared limits is back: limits are shared again")
        self._degraded = False

    @asynccontextmanager
    async def chat(self, caller: str, limits: CallerLimits | None) -> AsyncIterator[UsageCallback]:
        limits = limits or self.local.limiter.default
        try:
            spent = await self._check_tokens(caller, limits)
            held = await self._take(caller, limits)
        except self._errors as error:
            self._outage(error)
            async with self.local.chat(caller, limits) as on_usage:
                yield on_usage
            return
        self._recovered()
        try:
            yield self._usage_callback(caller, limits, spent)
        finally:
            if held:
                await self._release(caller)

    async def _check_tokens(self, caller: str, limits: CallerLimits) -> dict[int, int]:
        """Tokens spent in the current hour and day; raises when a budget is spent."""
        budgets = [(HOUR, limits.tokens_per_hour, "hourly"), (DAY, limits.tokens_per_day, "daily")]
        budgets = [b for b in budgets if b[1]]
        if not budgets:
            return {}
        now = time.time()
        keys = [self._token_key(caller, period, now) for period, _, _ in budgets]
        values = await self._redis.mget(keys)
        spent = {period: int(value or 0) for (period, _, _), value in zip(budgets, values, strict=True)}
        self._view(caller, limits, spent).check(caller, limits)  # words the refusal: which budget, when
        return spent

    @staticmethod
    def _view(caller: str, limits: CallerLimits, spent: dict[int, int]) -> TokenLedger:
        """A ledger holding the shared totals, for one chat."""
        ledger = TokenLedger(limits)
        for period, tokens in spent.items():
            ledger.seed(caller, period, tokens)
        return ledger

    def _usage_callback(self, caller: str, limits: CallerLimits, spent: dict[int, int]) -> UsageCallback:
        ledger = self._view(caller, limits, spent)  # shared totals at the chat's start + its own

        def on_usage(tokens: int) -> None:
            task = asyncio.get_running_loop().create_task(self._add_tokens(caller, limits, tokens))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            ledger.spend(caller, limits, tokens)

        return on_usage

    async def _add_tokens(self, caller: str, limits: CallerLimits, tokens: int) -> None:
        now = time.time()
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                for period, budget in ((HOUR, limits.tokens_per_hour), (DAY, limits.tokens_per_day)):
                    if budget:
                        key = self._token_key(caller, period, now)
                        pipe.incrby(key, tokens).expire(key, period)
                await pipe.execute()
        except self._errors as error:
            self._outage(error)
            try:  # kept locally, so this replica's budgets still count them
                self.local.ledger.spend(caller, limits, tokens)
            except TokenBudgetExhausted:
                pass

    async def _take(self, caller: str, limits: CallerLimits) -> bool:
        """Take a chat from the shared bucket and a concurrency place; True if a place is held."""
        if limits.chats:
            rate = limits.chats / limits.period_seconds
            wait = float(await self._bucket(keys=[f"{PREFIX}bucket:{caller}"], args=[limits.capacity, rate]))
            if wait > 0:
                self.local.limiter.decided(caller, False)
                raise RateLimited(
                    f"this caller is over its rate limit of {limits.chats:g} chats per "
                    f"{limits.period_seconds:g} s (all replicas); retry in {int(wait + 0.999)} s",
                    retry_after=wait,
                )
        if limits.concurrent_chats:
            key = f"{PREFIX}active:{caller}"
            async with self._redis.pipeline(transaction=True) as pipe:
                active, _ = await pipe.incr(key).expire(key, CONCURRENCY_TTL).execute()
            if active > limits.concurrent_chats:
                await self._redis.decr(key)
                self.local.limiter.decided(caller, False)
                raise RateLimited(
                    f"this caller already has {active - 1} chats in progress, its limit "
                    f"({limits.concurrent_chats}, all replicas); retry when one ends",
                    retry_after=1,
                )
            self.local.limiter.decided(caller, True)
            return True
        self.local.limiter.decided(caller, True)
        return False

    async def _release(self, caller: str) -> None:
        try:
            await self._redis.decr(f"{PREFIX}active:{caller}")
        except self._errors as error:
            self._outage(error)

    @staticmethod
    def _token_key(caller: str, period: int, now: float) -> str:
        return f"{PREFIX}tokens:{caller}:{period}:{int(now // period)}"

    async def close(self) -> None:
        await self._redis.aclose()
