"""The shared front-end state on a real redis-server: A2A tasks (versioned, scoped to their
owner, bounded), their event streams, the reaping of a dead replica's tasks, contextId
documents shared by two processes' worth of clients, and the behaviour when Redis is
away. The settings are checked at start."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion, VersionedEvent
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from a2a.utils.errors import InternalError

from gateway.a2a import redis_tasks
from gateway.a2a.redis_tasks import RedisTaskStore, owner_context
from gateway.composition import protocol_frontends
from gateway.state import StateSettings, StateUnavailable
from gateway.state.redis_state import RedisState
from tests.support.cluster import RedisProcess
from tests.support.waits import until

MINE, THEIRS = owner_context("me:echo"), owner_context("them:echo")


def _task(task_id: str, state: TaskState = TaskState.TASK_STATE_WORKING) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state))


@pytest.mark.slow
def test_tasks_are_versioned_scoped_to_their_owner_and_bounded(
    redis: RedisProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_tasks, "MAX_TASKS_PER_OWNER", 3)

    async def scenario() -> None:
        one, two = RedisState(redis.url, 5), RedisState(redis.url, 5)  # two replicas
        a, b = RedisTaskStore(one, 3600), RedisTaskStore(two, 3600)
        try:
            first = await a.save(_task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=MINE)
            stored = await b.get("t1", MINE)
            assert stored is not None and stored.version == first
            assert await b.get("t1", THEIRS) is None  # another key does not see it
            second = await b.save(_task("t1"), event=None, prev=None, prev_version=first, context=MINE)
            with pytest.raises(ConcurrentTaskModificationError):  # a stale writer loses
                await a.save(_task("t1"), event=None, prev=None, prev_version=first, context=MINE)
            # A cancellation overwrites a task in progress whatever its version…
            cancelled = _task("t1", TaskState.TASK_STATE_CANCELED)
            third = await a.save(cancelled, event=None, prev=None, prev_version=first, context=MINE)
            assert third.is_after(second)
            with pytest.raises(ConcurrentTaskModificationError):  # …but not a finished one
                await a.save(cancelled, event=None, prev=None, prev_version=third, context=MINE)
            for n in range(2, 6):  # the owner keeps at most 3: the oldest go
                await a.save(_task(f"t{n}"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=MINE)
            listed = await b.list(ListTasksRequest(), MINE)
            assert sorted(t.id for t in listed.tasks) == ["t3", "t4", "t5"]
            assert await b.get("t1", MINE) is None
            assert list((await b.list(ListTasksRequest(), THEIRS)).tasks) == []
        finally:
            for state in (one, two):
                await state.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_events_reach_another_replica_and_a_dead_replica_s_task_fails(redis: RedisProcess) -> None:
    async def scenario() -> None:
        running, watching = RedisState(redis.url, 1), RedisState(redis.url, 1)
        a, b = RedisTaskStore(running, 3600), RedisTaskStore(watching, 3600)
        running.start()
        try:
            version = await a.save(_task("t9"), event=None, prev=None, prev_version=TaskVersion.MISSING,
                                   context=MINE)
            await a.running("t9", "me:echo")
            seen: list[VersionedEvent] = []

            async def tail() -> None:
                async for event in b.subscribe("t9", after=version):
                    seen.append(event)
                    if event.event.status.state == TaskState.TASK_STATE_FAILED:  # type: ignore[union-attr]
                        return

            tailing = asyncio.ensure_future(tail())
            update = TaskStatusUpdateEvent(task_id="t9", context_id="c",
                                           status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
            newer = await a.save(_task("t9"), event=update, prev=None, prev_version=version, context=MINE)
            await a.publish("t9", VersionedEvent(update, newer))
            await a.publish("t9", VersionedEvent(update, version))  # not after the snapshot: skipped
            # A last event marks the end: once it is seen, the skipped one would have been too.
            newest = await a.save(_task("t9"), event=update, prev=None, prev_version=newer, context=MINE)
            await a.publish("t9", VersionedEvent(update, newest))
            assert await until(lambda: len(seen) >= 2), seen
            assert [e.version for e in seen] == [newer, newest]
            stored = await b.get("t9", MINE)
            assert stored is not None and stored.task.status.state == TaskState.TASK_STATE_WORKING
            await running.close()  # the replica stops; its lease is gone
            await asyncio.wait_for(tailing, 10)  # the tail itself notices and fails the task
            failed = await b.get("t9", MINE)
            assert failed is not None and failed.task.status.state == TaskState.TASK_STATE_FAILED
            assert "stopped before it ended" in failed.task.status.message.parts[0].text
        finally:
            await watching.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_documents_are_shared_and_expire_and_an_outage_is_clear(
    redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        one, two = RedisState(redis.url, 5), RedisState(redis.url, 5)
        try:
            await one.put_json("ctx", "k", {"n": 1}, 60)
            await one.put_json("ctx", "short", {"n": 2}, 0.2)
            assert await two.get_json("ctx", "k") == {"n": 1}

            async def expired() -> bool:
                return await two.get_json("ctx", "short") is None

            assert await until(expired), "a document outlived its TTL"
            redis.stop()
            started = time.monotonic()
            with pytest.raises(StateUnavailable, match="unreachable"):
                await two.get_json("ctx", "k")
            assert time.monotonic() - started < 5  # nothing hangs
            assert not await two.available()
            redis.start()
            assert await two.available()
            assert await two.get_json("ctx", "k") is None  # this Redis kept nothing (no persistence)
        finally:
            await one.close()
            await two.close()

    with caplog.at_level(logging.WARNING, logger="gateway.state.redis_state"):
        asyncio.run(scenario())
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("unreachable" in m for m in messages) and any("is back" in m for m in messages)


@pytest.mark.slow
def test_a2a_errors_say_the_shared_state_is_away(redis: RedisProcess) -> None:
    async def scenario() -> None:
        state = RedisState(redis.url, 5)
        store = RedisTaskStore(state, 3600)
        redis.stop()
        try:
            with pytest.raises(InternalError, match="Redis"):
                await store.get("t1", MINE)
        finally:
            await state.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENT_REDIS_URL": "http://redis:6379"}, "AGENT_REDIS_URL must be a redis://"),
        ({"AGENT_REPLICA_LEASE_SECONDS": "soon"}, "AGENT_REPLICA_LEASE_SECONDS='soon' is not a number"),
        ({"AGENT_REPLICA_LEASE_SECONDS": "0"}, "between 1 and 3600"),
        ({"AGENT_A2A_TASK_TTL_SECONDS": "5"}, "AGENT_A2A_TASK_TTL_SECONDS must be between 60"),
    ],
)
def test_wrong_settings_are_refused_at_start(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StateSettings.from_env(env)
    with pytest.raises(ValueError, match=message):
        protocol_frontends(playground=False, env=env)
    assert StateSettings.from_env({"AGENT_REDIS_URL": "redis://r:6379/0"}).redis_url == "redis://r:6379/0"
