"""LLM token budgets per caller (a controllable clock) and the per-request token cap,
with the runtime talking to the fake LLM over real HTTP."""

from __future__ import annotations

import functools
from datetime import UTC, datetime

import pytest

from neuro_san.core.errors import ConfigurationError, LimitExceeded
from neuro_san.core.messages import ChatFilter, ChatRequest
from neuro_san.core.rate_limits import CallerLimits
from neuro_san.core.token_budgets import TokenBudgetExhausted, TokenLedger
from neuro_san.network.builder import build_network
from tests.fakes.fake_llm import FakeLlmServer, run_with_fake_llm
from tests.support.runtime import make_host

#: 2026-11-30 18:20:00 UTC.
START = datetime(2026, 11, 30, 18, 20, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def test_an_hourly_budget_refuses_before_a_chat_says_when_it_resets_and_resets() -> None:
    clock = Clock()
    ledger = TokenLedger(CallerLimits(tokens_per_hour=100, tokens_per_day=250), clock)
    ledger.check("a", None)
    ledger.spend("a", None, 60)
    ledger.check("a", None)
    with pytest.raises(TokenBudgetExhausted) as crossed:
        ledger.spend("a", None, 50)  # crossing mid-chat stops it
    assert "was crossed during this chat" in crossed.value.message
    with pytest.raises(TokenBudgetExhausted) as refused:
        ledger.check("a", None)
    assert "hourly LLM token budget (100 tokens) is spent" in refused.value.message
    assert "resets at 2026-11-30 19:00:00 UTC" in refused.value.message
    assert refused.value.retry_after == 40 * 60
    ledger.check("b", None)  # another caller is unaffected
    clock.now += 40 * 60  # the next hour
    ledger.spend("a", None, 90)  # 90 this hour, 200 today
    clock.now += 3600
    with pytest.raises(TokenBudgetExhausted, match="daily"):
        ledger.spend("a", None, 60)  # 60 this hour, 260 today: the day is crossed
    with pytest.raises(TokenBudgetExhausted, match="daily LLM token budget \\(250 tokens\\).*2026-12-01 00:00:00 UTC"):
        ledger.check("a", None)
    clock.now += 5 * 3600  # the next day
    ledger.check("a", None)


def test_a_key_s_budget_wins_over_the_default() -> None:
    ledger = TokenLedger(CallerLimits(tokens_per_hour=10), Clock())
    ledger.spend("a", CallerLimits(tokens_per_hour=1000), 500)
    ledger.check("a", CallerLimits(tokens_per_hour=1000))
    with pytest.raises(TokenBudgetExhausted):
        ledger.spend("b", None, 11)


def _echo(fake: FakeLlmServer, **top: object) -> dict[str, object]:
    return {"llm_config": fake.llm_config(), "tools": [{"name": "echo", "instructions": "Echo."}], **top}


async def _chat(host: object, request: ChatRequest) -> None:
    async for _ in host.chat("echo", request):  # type: ignore[attr-defined]
        pass


def test_a_chat_that_crosses_its_budget_finishes_its_llm_call_and_stops() -> None:
    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"echo": _echo(fake)})
        ledger = TokenLedger(CallerLimits(tokens_per_hour=3), Clock())
        try:
            request = ChatRequest(user_text="one two three four", chat_filter=ChatFilter.MAXIMAL)
            request.on_usage = functools.partial(ledger.spend, "a", None)
            with pytest.raises(TokenBudgetExhausted, match="hourly LLM token budget"):
                await _chat(host, request)
            assert len(fake.requests) == 1  # the call that crossed it completed; no other
            with pytest.raises(TokenBudgetExhausted, match="is spent"):
                ledger.check("a", None)  # the next chat is refused before it starts
        finally:
            await factory.aclose()

    run_with_fake_llm(body)


def test_the_per_request_token_cap_from_the_network_or_the_server_default() -> None:
    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"echo": _echo(fake, max_tokens_per_request=2)})
        default_host, default_factory = make_host({"echo": _echo(fake)}, max_tokens_per_request=2)
        roomy, roomy_factory = make_host({"echo": _echo(fake, max_tokens_per_request=10_000)}, max_tokens_per_request=2)
        try:
            for capped in (host, default_host):
                with pytest.raises(LimitExceeded, match="over its cap of 2 \\(max_tokens_per_request\\)"):
                    await _chat(capped, ChatRequest(user_text="one two three"))
            await _chat(roomy, ChatRequest(user_text="one two three"))  # the network's own cap wins
        finally:
            for f in (factory, default_factory, roomy_factory):
                await f.aclose()

    run_with_fake_llm(body)


def test_a_bad_max_tokens_per_request_is_refused_at_load() -> None:
    document = {"llm_config": {"model_name": "x"}, "tools": [{"name": "a", "instructions": "A."}]}
    with pytest.raises(ConfigurationError, match="max_tokens_per_request"):
        build_network({**document, "max_tokens_per_request": 0}, "<t>", "t")
    assert build_network({**document, "max_tokens_per_request": 7}, "<t>", "t").max_tokens_per_request == 7
