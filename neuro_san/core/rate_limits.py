"""Per-caller rate limits: chats per period (a token bucket) and concurrent chats.

A caller is an API key (its name in the keys file never leaves the server; metrics see
only a hash) or, when keys are off, the client's address. Limits come from the key's
``limits`` in the API keys file, else the defaults (``AGENT_RATE_LIMIT_*``)::

    keys:
      - name: reporting
        key: "…"
        limits: {chats: 30, period_seconds: 60, burst: 10, concurrent_chats: 2}

A refused chat raises :class:`RateLimited` (RESOURCE_EXHAUSTED; HTTP 429) carrying
``retry_after`` seconds, which the transports send as ``retry-after`` / ``Retry-After``.
State is per process (per replica) unless a shared store is configured.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from neuro_san.core.errors import CapacityError, Code, ConfigurationError


class RateLimited(CapacityError):
    code = Code.RESOURCE_EXHAUSTED
    reason = "RATE_LIMITED"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        #: Whole seconds (at least 1) before a retry can succeed.
        self.retry_after = max(1, math.ceil(retry_after))


@dataclass(frozen=True, slots=True)
class CallerLimits:
    #: Chats per ``period_seconds``; 0: no rate limit.
    chats: float = 0
    period_seconds: float = 60.0
    #: Chats that may come at once after a quiet time; 0: ``chats``.
    burst: int = 0
    #: Chats in progress at once; 0: no cap.
    concurrent_chats: int = 0
    #: LLM tokens per UTC hour / day (see token_budgets.py); 0: no budget.
    tokens_per_hour: int = 0
    tokens_per_day: int = 0

    @property
    def capacity(self) -> float:
        return float(self.burst or max(1.0, self.chats))

    @property
    def limits_anything(self) -> bool:
        """True when any of them caps something (a period or burst alone caps nothing)."""
        return bool(self.chats or self.concurrent_chats or self.tokens_per_hour or self.tokens_per_day)

    @classmethod
    def parse(cls, where: str, raw: Any, base: CallerLimits | None = None) -> CallerLimits:
        """Limits from a mapping (keys file or environment); unknown names and values
        that are not non-negative numbers are refused, never ignored."""
        if not isinstance(raw, Mapping):
            raise ConfigurationError(f"{where}: 'limits' must be a mapping")
        values: dict[str, Any] = {}
        kinds = {
            "chats": float, "period_seconds": float, "burst": int, "concurrent_chats": int,
            "tokens_per_hour": int, "tokens_per_day": int,
        }  # fmt: skip
        for name, value in raw.items():
            if name not in kinds:
                raise ConfigurationError(f"{where}: unknown limit {name!r} (known: {', '.join(kinds)})")
            try:
                number = kinds[name](value)
            except (TypeError, ValueError):
                raise ConfigurationError(f"{where}: limit {name!r} must be a number, not {value!r}") from None
            if number < 0 or (name == "period_seconds" and number == 0):
                raise ConfigurationError(f"{where}: limit {name!r} must be positive")
            values[name] = number
        base = base or cls()
        return cls(**{**{f: getattr(base, f) for f in kinds}, **values})

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CallerLimits:
        raw = {name: env[var].strip() for var, name in _ENV_DEFAULTS if env.get(var, "").strip()}
        return cls.parse("AGENT_RATE_LIMIT_*", raw)


_ENV_DEFAULTS = (
    ("AGENT_RATE_LIMIT_CHATS", "chats"),
    ("AGENT_RATE_LIMIT_PERIOD_SECONDS", "period_seconds"),
    ("AGENT_RATE_LIMIT_BURST", "burst"),
    ("AGENT_RATE_LIMIT_CONCURRENT_CHATS", "concurrent_chats"),
    ("AGENT_TOKEN_BUDGET_PER_HOUR", "tokens_per_hour"),
    ("AGENT_TOKEN_BUDGET_PER_DAY", "tokens_per_day"),
)


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float
    active: int = 0


#: Buckets kept before full, idle ones are forgotten (a full bucket is the same as none).
MAX_TRACKED_CALLERS = 100_000


class RateLimiter:
    """Token buckets and concurrency counts per caller, in this process."""

    def __init__(
        self,
        default: CallerLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_decision: Callable[[str, bool], None] | None = None,
    ) -> None:
        self.default = default or CallerLimits()
        self._clock = clock
        self._on_decision = on_decision
        self._buckets: dict[str, _Bucket] = {}

    @contextmanager
    def chat(self, caller: str, limits: CallerLimits | None = None) -> Iterator[None]:
        """Hold a place for one chat of ``caller``, or raise :class:`RateLimited`."""
        limits = limits or self.default
        if not limits.chats and not limits.concurrent_chats:
            yield
            return
        bucket = self._take(caller, limits)
        bucket.active += 1
        try:
            yield
        finally:
            bucket.active -= 1

    def _take(self, caller: str, limits: CallerLimits) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.get(caller)
        if bucket is None:
            if len(self._buckets) >= MAX_TRACKED_CALLERS:
                self._forget_idle(now)
            bucket = self._buckets[caller] = _Bucket(limits.capacity, now)
        if limits.concurrent_chats and bucket.active >= limits.concurrent_chats:
            self.decided(caller, False)
            raise RateLimited(
                f"this caller already has {bucket.active} chats in progress, its limit "
                f"({limits.concurrent_chats}); retry when one ends",
                retry_after=1,
            )
        if limits.chats:
            rate = limits.chats / limits.period_seconds
            bucket.tokens = min(limits.capacity, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            if bucket.tokens < 1:
                self.decided(caller, False)
                wait = (1 - bucket.tokens) / rate
                raise RateLimited(
                    f"this caller is over its rate limit of {limits.chats:g} chats per "
                    f"{limits.period_seconds:g} s; retry in {math.ceil(wait)} s",
                    retry_after=wait,
                )
            bucket.tokens -= 1
        self.decided(caller, True)
        return bucket

    def decided(self, caller: str, allowed: bool) -> None:
        if self._on_decision is not None:
            self._on_decision(caller, allowed)

    def _forget_idle(self, now: float) -> None:
        for caller in [c for c, b in self._buckets.items() if not b.active]:
            del self._buckets[caller]
