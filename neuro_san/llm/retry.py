"""When to retry an LLM call, and how long to wait first. Pure functions, no I/O.

Providers tell a client to slow down with 429, time out on their side with 408, and, under load, answer 5xx (Anthropic
uses 529 for "overloaded"). Those, and dropped connections, are worth another attempt;
everything else (400, 401, 404 …) will fail the same way again, so it is not retried.

Waiting follows "exponential backoff with full jitter" (AWS architecture blog): a random
delay in ``[0, min(cap, base * 2**n)]`` spreads the retries of many concurrent requests
instead of having them hit the provider again in lock step. A ``Retry-After`` from the
provider wins over the computed delay, capped so that one odd header cannot park a
request for an hour.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

#: HTTP statuses that mean "try again later".
RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts to make and how long to wait between them (seconds)."""

    max_attempts: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    #: The longest ``Retry-After`` honoured; longer values are cut to this.
    retry_after_cap: float = 30.0

    def delay(self, failed_attempts: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after ``failed_attempts`` (1-based) attempts have failed."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** (failed_attempts - 1))
        return rng.uniform(0.0, ceiling)


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the provider asked us to wait, or None.

    Understands ``retry-after-ms`` (OpenAI), ``Retry-After`` in seconds (possibly
    fractional) and ``Retry-After`` as an HTTP date. ``headers`` lookups must be
    case-insensitive (aiohttp's ``CIMultiDictProxy`` is) or use lower-case names.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max((when - current).total_seconds(), 0.0)
