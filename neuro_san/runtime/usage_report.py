"""Token accounting in neuro-san 0.7's shapes: who counts what, and the reports' keys.

Every LLM call is added to a chain of tallies held in a context variable, so it counts
for every agent invocation above it (an agent's report covers the agents it called, as
neuro-san's does), for the main network's accounting and for the request total. The
chain follows the call tree through ``asyncio`` tasks (parallel tool calls copy it) and
into a ``/name`` network called in-process: such a call pushes a boundary, so the
called network's usage reaches the caller's request total but not the caller's
main-network accounting, and its front man reports like any other agent instead of
sending request totals of its own.

Reports (the ``structure`` of an AGENT message, whose text is empty):

- an agent: ``total_tokens``, ``prompt_tokens``, ``completion_tokens``,
  ``successful_requests``, ``empty_responses``, ``total_cost``, ``time_taken_in_seconds``,
  ``caveats``;
- the main front man, at the end of the request: the main network's accounting (same
  keys), then the request total, which adds ``models``: ``{provider: {model: {…}}}``.

The caveats say what is true of ours, not neuro-san's (which estimates with tiktoken and
prices calls): counts are what the provider reported, and no cost is computed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from neuro_san.llm.interface import ModelResponse, Usage

AGENT_CAVEAT = (
    "Token usage is tracked at the agent level. "
    "Counts include usage from any downstream agents called on this agent's behalf."
)
MAIN_NETWORK_CAVEAT = (
    "Token usage from agents of the main agent network only. Usage from external agents is not included."
)
TOTAL_CAVEAT = (
    "Request total: includes token usage from external agents called as /name on this server. "
    "Usage from external agents on other servers is not included."
)
COMMON_CAVEATS = (
    "Token counts are those the LLM provider reported for each call.",
    "total_cost is not computed and is always 0.0.",
    "time_taken_in_seconds is wall-clock time, tool calls included.",
)


@dataclass
class ModelTally:
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    empty: int = 0
    seconds: float = 0.0


@dataclass
class UsageTally:
    """Usage heard by one scope: an agent invocation, a network's agents, or a request.

    ``boundary`` marks a request's outermost tally: calls recorded below a boundary skip
    the ``network_only`` tallies above it (the caller's main-network accounting)."""

    network_only: bool = False
    boundary: bool = False
    by_model: dict[tuple[str, str], ModelTally] = field(default_factory=dict)
    #: Caveats about this scope's calls (a reply cut off at the token limit), first ones first.
    caveats: list[str] = field(default_factory=list)

    def add(self, provider: str, model: str, usage: Usage, empty: bool, seconds: float) -> None:
        entry = self.by_model.setdefault((provider, model), ModelTally())
        entry.usage = entry.usage + usage
        entry.requests += 1
        entry.empty += int(empty)
        entry.seconds += seconds

    def total(self) -> ModelTally:
        total = ModelTally()
        for entry in self.by_model.values():
            total.usage = total.usage + entry.usage
            total.requests += entry.requests
            total.empty += entry.empty
        return total


_CHAIN: ContextVar[tuple[UsageTally, ...]] = ContextVar("neuro_san_usage_chain", default=())


def record_llm_call(provider: str, model_name: str, response: ModelResponse, seconds: float) -> None:
    """Count one answered LLM call for every scope it happened under."""
    empty = not response.text and not response.tool_calls
    model = response.model or model_name
    crossed = False
    for tally in reversed(_CHAIN.get()):
        if not (tally.network_only and crossed):
            tally.add(provider, model, response.usage, empty, seconds)
        crossed = crossed or tally.boundary


def add_caveat(text: str) -> None:
    """Note ``text`` in the report of every scope the current call is under."""
    for tally in _CHAIN.get():
        if text not in tally.caveats:
            tally.caveats.append(text)


@contextmanager
def _pushed(*tallies: UsageTally) -> Iterator[None]:
    token = _CHAIN.set((*_CHAIN.get(), *tallies))
    try:
        yield
    finally:
        _CHAIN.reset(token)


@dataclass
class RequestUsage:
    """The tallies of one request (or of a ``/name`` network called in-process)."""

    nested: bool
    total: UsageTally = field(default_factory=lambda: UsageTally(boundary=True))
    network: UsageTally = field(default_factory=lambda: UsageTally(network_only=True))
    started: float = field(default_factory=time.monotonic)

    def reports(self, main_network: bool = True) -> list[dict[str, Any]]:
        """The main front man's two closing reports: main network, then request total;
        only the total when not ``main_network``."""
        seconds = time.monotonic() - self.started
        total = _report(self.total.total(), seconds, TOTAL_CAVEAT, self.total.caveats)
        models: dict[str, dict[str, Any]] = {}
        for (provider, model), entry in self.total.by_model.items():
            models.setdefault(provider, {})[model] = _report(entry, entry.seconds, None)
        total["models"] = models
        if not main_network:
            return [total]
        return [_report(self.network.total(), seconds, MAIN_NETWORK_CAVEAT, self.network.caveats), total]


@contextmanager
def request_usage() -> Iterator[RequestUsage]:
    """Scope one request's accounting. ``nested`` is true for a ``/name`` network
    called in-process by another request, whose front man then reports as an agent."""
    scope = RequestUsage(nested=bool(_CHAIN.get()))
    with _pushed(scope.total, scope.network):
        yield scope


@dataclass
class AgentUsage:
    tally: UsageTally
    main_front_man: bool
    started: float = field(default_factory=time.monotonic)

    def report(self) -> dict[str, Any] | None:
        """This invocation's report, or None for the main front man (whose usage the
        request's closing reports give)."""
        if self.main_front_man:
            return None
        return _report(self.tally.total(), time.monotonic() - self.started, AGENT_CAVEAT, self.tally.caveats)


@contextmanager
def agent_usage(depth: int) -> Iterator[AgentUsage]:
    """Scope one agent invocation; ``depth`` is the length of its origin."""
    chain = _CHAIN.get()
    top_level = sum(1 for tally in chain if tally.boundary) == 1
    scope = AgentUsage(UsageTally(), main_front_man=depth == 1 and top_level)
    with _pushed(scope.tally):
        yield scope


def _report(
    entry: ModelTally, seconds: float, caveat: str | None, extra: list[str] | None = None
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "total_tokens": entry.usage.total_tokens,
        "prompt_tokens": entry.usage.prompt_tokens,
        "completion_tokens": entry.usage.completion_tokens,
        "successful_requests": entry.requests,
        "empty_responses": entry.empty,
        "total_cost": 0.0,
        "time_taken_in_seconds": round(seconds, 6),
    }
    if caveat is not None:
        report["caveats"] = [*(extra or ()), caveat, *COMMON_CAVEATS]
    return report
