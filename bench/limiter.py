"""The per-caller limiter's cost per chat (issue 18): the gate every StreamingChat passes
(rate limiter + token ledger), timed in-process with limits off and on, many callers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from neuro_san.core.rate_limits import CallerLimits, RateLimiter
from neuro_san.core.token_budgets import TokenLedger
from neuro_san.service.limits_gate import LocalGate

CALLERS = 1000


async def _per_chat_us(gate: LocalGate, chats: int) -> float:
    started = time.perf_counter()
    for n in range(chats):
        async with gate.chat(f"key:{n % CALLERS}", None) as on_usage:
            on_usage(100)  # one LLM call's tokens
    return (time.perf_counter() - started) / chats * 1e6


def run_limiter(smoke: bool) -> dict[str, Any]:
    chats = 2_000 if smoke else 200_000
    on = CallerLimits(chats=1e9, concurrent_chats=100, tokens_per_hour=10**12, tokens_per_day=10**12)
    off = LocalGate(RateLimiter(), TokenLedger())
    limited = LocalGate(RateLimiter(on), TokenLedger(on))
    return {
        "chats": chats,
        "off_us_per_chat": asyncio.run(_per_chat_us(off, chats)),
        "on_us_per_chat": asyncio.run(_per_chat_us(limited, chats)),
    }
