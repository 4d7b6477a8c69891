"""Three server processes behind the standalone gateway (and behind a gRPC round-robin
channel): conversations move between replicas through ``chat_context`` alone, and a
replica killed with SIGKILL under load fails only the chats it had in flight.

Each replica's ``AGENT_LLM_OVERRIDE`` names a different model (``replica-<n>``), so the
fake LLM's requests tell which replica served which turn. All three share one
``AGENT_CHAT_CONTEXT_KEY``, so the signed context of one verifies on the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
import pytest

from tests.fakes.fake_llm import FakeLlmServer, RecordedRequest, Reply
from tests.support import load
from tests.support.fake_thread import FakeInThread
from tests.support.servers import ServerProcess, start_server
from tests.support.waits import until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

KEY = "replicas-share-this-key-0123456789"
CLIENTS = 12
#: Chats named ``slow-…`` take this long at the LLM, so a kill finds some in flight.
SLOW_SECONDS = 0.3


@dataclass
class Cluster:
    fake: FakeLlmServer
    replicas: list[ServerProcess]
    gateway: load.GatewayProcess

    def served_by(self, text: str) -> set[str]:
        return {r.body.get("model", "") for r in list(self.fake.requests) if r.last_input_text() == text}

    @property
    def round_robin_target(self) -> str:
        return "ipv4:" + ",".join(r.grpc_target for r in self.replicas)


def _slow_for_load(request: RecordedRequest) -> Reply | None:
    return Reply.stall(SLOW_SECONDS) if request.last_input_text().startswith("slow-") else None


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with FakeInThread(rule=_slow_for_load) as fake, contextlib.ExitStack() as stack:
        replicas = [
            stack.enter_context(
                start_server(
                    env={
                        "AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(model_name=f"replica-{n}", max_attempts=1)),
                        "AGENT_CHAT_CONTEXT_KEY": KEY,
                    }
                )
            )
            for n in range(3)
        ]
        gateway = stack.enter_context(load.standalone_gateway([r.grpc_target for r in replicas]))
        yield Cluster(fake, replicas, gateway)


def test_a_conversation_continues_on_every_replica(cluster: Cluster) -> None:
    texts = [f"turn-{n}-{time.monotonic_ns()}" for n in range(6)]

    async def conversation() -> dict[str, Any] | None:
        context = None
        async with aiohttp.ClientSession() as session:
            for number, text in enumerate(texts):
                if number < 3:  # straight to each replica in turn, over gRPC
                    async with grpc.aio.insecure_channel(cluster.replicas[number].grpc_target) as channel:
                        outcome = await load.grpc_chat(channel, "echo", text, context)
                else:  # through the gateway, which round-robins
                    outcome = await load.http_chat(session, cluster.gateway.http_base, "echo", text, context)
                assert outcome.ok and outcome.text == text, outcome
                context = outcome.chat_context
        return context

    context = asyncio.run(conversation())
    served = [cluster.served_by(text) for text in texts]
    assert served[:3] == [{"replica-0"}, {"replica-1"}, {"replica-2"}], served
    assert len(set.union(*served[3:])) >= 2, f"the gateway did not spread the turns: {served}"
    for number, text in enumerate(texts):  # each turn's LLM call carried every earlier turn
        request = next(r for r in cluster.fake.requests if r.last_input_text() == text)
        users = [m["content"] for m in request.messages if m["role"] == "user"]
        assert users == texts[: number + 1], (number, users)
    assert context is not None
    front = [h for h in context["chat_histories"] if h["origin"][0]["tool"] == "echoer"]
    assert [m["text"] for m in front[0]["messages"]] == [t for text in texts for t in (text, text)]


@dataclass
class Timed:
    outcome: load.ChatOutcome
    text: str
    started: float
    ended: float


async def _load_until(cluster: Cluster, stop_at: list[float], results: list[Timed]) -> None:
    """Chats from CLIENTS clients until ``stop_at[0]`` (which the caller may move)."""
    counter = iter(range(1_000_000))

    async def client(number: int, channel: grpc.aio.Channel, session: aiohttp.ClientSession) -> None:
        while time.monotonic() < stop_at[0]:
            text = f"slow-{number}-{next(counter)}"
            started = time.monotonic()
            try:
                if number % 2:
                    outcome = await load.grpc_chat(channel, "echo", text, timeout=15)
                else:
                    outcome = await load.http_chat(session, cluster.gateway.http_base, "echo", text, timeout=15)
            except (TimeoutError, aiohttp.ClientError) as error:
                outcome = load.ChatOutcome("http", code="CLIENT_SIDE", message=repr(error))
            results.append(Timed(outcome, text, started, time.monotonic()))

    async with grpc.aio.insecure_channel(
        cluster.round_robin_target, options=[("grpc.lb_policy_name", "round_robin")]
    ) as channel, aiohttp.ClientSession() as session:
        await asyncio.gather(*(client(n, channel, session) for n in range(CLIENTS)))


DETECTION_WINDOW_SECONDS = 0.25


def test_kill_9_of_a_replica_fails_only_its_in_flight_chats(cluster: Cluster) -> None:
    """Runs last in this module: it leaves the cluster one replica short."""
    victim = cluster.replicas[1]
    results: list[Timed] = []

    async def scenario() -> float:
        stop_at = [time.monotonic() + 60.0]  # a bound against hanging: moved once the kill is done
        load_task = asyncio.create_task(_load_until(cluster, stop_at, results))
        # Kill once the load is well under way: 20 chats answered (checked below).
        assert await until(lambda: sum(r.outcome.ok for r in results) >= 20 or load_task.done(), 30)
        assert not load_task.done(), load_task
        killed_at = time.monotonic()
        victim.process.kill()
        stop_at[0] = killed_at + 3.0  # the behaviour under test: 3 s of load after the kill
        await asyncio.wait_for(load_task, 30)
        return killed_at

    killed_at = asyncio.run(scenario())
    assert victim.process.wait(5) == -9

    failed = [r for r in results if not r.outcome.ok]
    # A call a client sends in the moment between the kill and its channel noticing the
    # dead connection goes out on that connection and fails at once (UNAVAILABLE,
    # "broken pipe"): it is in flight at the kill as far as the network can know. Calls
    # sent after that window must all succeed.
    noticed_at = killed_at + DETECTION_WINDOW_SECONDS
    later = [r for r in results if r.started > noticed_at]
    assert len(later) >= 20, "too little load after the kill"
    assert not [r for r in later if not r.outcome.ok], [r for r in later if not r.outcome.ok][:3]
    for result in failed:
        assert result.started <= noticed_at and killed_at <= result.ended, f"failed while not in flight: {result}"
        assert result.outcome.code == "UNAVAILABLE" and result.outcome.message, result
        if result.outcome.transport == "http":
            assert result.outcome.http_status in (200, 503), result  # an error line, or 503
        assert cluster.served_by(result.text) <= {"replica-1"}, result
    assert 1 <= len(failed) <= CLIENTS, "the kill found no chat in flight: it proves nothing"
    assert sum(1 for r in results if r.outcome.ok and r.started < killed_at) >= 20
    assert all(r.ended - r.started < 10 for r in results), "a chat hung"
    for survivor in (cluster.replicas[0], cluster.replicas[2]):
        assert survivor.process.poll() is None
    assert cluster.gateway.process.poll() is None
