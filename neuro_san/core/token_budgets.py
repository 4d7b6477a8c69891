"""LLM token budgets per caller: tokens per hour and per day.

Counted from the usage the runtime already records after each LLM call. Windows are
fixed UTC hours and days, so "resets at 19:00 UTC" is exact. A chat is refused before it
starts when a budget is spent; a chat that crosses a budget mid-way is stopped after the
LLM call that crossed it (its tokens are already spent; no further call is made).
Budgets come from ``tokens_per_hour`` / ``tokens_per_day`` in a key's ``limits`` or the
defaults (``AGENT_TOKEN_BUDGET_PER_HOUR`` / ``AGENT_TOKEN_BUDGET_PER_DAY``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from neuro_san.core.errors import Code, RunError
from neuro_san.core.rate_limits import CallerLimits

HOUR = 3600
DAY = 86400


class TokenBudgetExhausted(RunError):
    code = Code.RESOURCE_EXHAUSTED
    reason = "TOKEN_BUDGET_EXHAUSTED"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(1, int(retry_after + 0.999))


class TokenLedger:
    """Tokens spent per caller in the current hour and day, in this process."""

    def __init__(self, default: CallerLimits | None = None, clock: Callable[[], float] = time.time) -> None:
        self.default = default or CallerLimits()
        self._clock = clock
        #: caller → {(period, window index): tokens}
        self._spent: dict[str, dict[tuple[int, int], int]] = {}

    def _budgets(self, limits: CallerLimits | None) -> list[tuple[str, int, int]]:
        limits = limits or self.default
        found = []
        if limits.tokens_per_hour:
            found.append(("hourly", HOUR, limits.tokens_per_hour))
        if limits.tokens_per_day:
            found.append(("daily", DAY, limits.tokens_per_day))
        return found

    def seed(self, caller: str, period: int, tokens: int) -> None:
        """Start the current ``period`` window of ``caller`` at ``tokens`` (shared totals)."""
        self._spent.setdefault(caller, {})[(period, int(self._clock() // period))] = tokens

    def check(self, caller: str, limits: CallerLimits | None) -> None:
        """Raise :class:`TokenBudgetExhausted` if a budget of ``caller`` is already spent."""
        self._over(caller, limits, 0, "is spent")

    def spend(self, caller: str, limits: CallerLimits | None, tokens: int) -> None:
        """Count ``tokens``; raise if that crossed a budget (the chat stops here)."""
        self._over(caller, limits, tokens, "was crossed during this chat")

    def _over(self, caller: str, limits: CallerLimits | None, tokens: int, how: str) -> None:
        budgets = self._budgets(limits)
        if not budgets:
            return
        now = self._clock()
        spent = self._spent.setdefault(caller, {})
        current = {(period, int(now // period)) for _, period, _ in budgets}
        for window in [w for w in spent if w not in current]:  # old windows are over
            del spent[window]
        exhausted = None
        for label, period, budget in budgets:
            window = (period, int(now // period))
            spent[window] = spent.get(window, 0) + tokens
            if spent[window] >= budget and exhausted is None:
                exhausted = (label, period, budget, window[1])
        if exhausted is not None:
            label, period, budget, index = exhausted
            reset = (index + 1) * period
            when = datetime.fromtimestamp(reset, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            raise TokenBudgetExhausted(
                f"this caller's {label} LLM token budget ({budget} tokens) {how}; it resets at {when}",
                retry_after=reset - now,
            )
