"""An A2A task ended by another writer stays ended: a ``neuro-san serve`` replica on a real
``redis-server`` runs a task while a second writer (this test, through the same Redis task
store, as the reaper of another replica would) fails it; when the replica's chat then
finishes, its answer and COMPLETED must not overwrite the FAILED task, in the store, on the
task's event stream, to the client or at the webhook.

Found reproducing a flake: the client got FAILED while the webhook got COMPLETED then
FAILED. The replica's first save after the other write conflicts and the a2a-sdk reloads the
ended task and stops the chat, but it still saves the events the chat had already queued,
with the reloaded version, which the store used to accept.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from a2a.server.cluster import VersionedEvent
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from gateway.a2a.redis_tasks import RedisTaskStore, owner_context
from gateway.state.redis_state import PREFIX as REDIS_PREFIX
from gateway.state.redis_state import RedisState
from tests.a2a_support import user_message
from tests.fakes.fake_llm import FakeLlmServer, Reply
from tests.support.cluster import Cluster, cluster, tools_missing
from tests.support.fake_thread import FakeInThread
from tests.support.waits import until
from tests.system.test_scale_out import Receiver, client_for, task_id_once_working

pytestmark = [pytest.mark.slow, pytest.mark.skipif(tools_missing() is not None, reason=str(tools_missing()))]

LEASE = 2.0
ENDED = "Error: ended by another writer"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeLlmServer, Cluster]]:
    folder: Path = tmp_path_factory.mktemp("cluster")
    with FakeInThread() as fake:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(max_attempts=1)),
               "AGENT_REPLICA_LEASE_SECONDS": str(LEASE),
               "AGENT_A2A_PUSH_ALLOWED_NETWORKS": "127.0.0.0/8"}  # the test's webhook receiver
        with cluster(folder, env, replicas=1) as running:  # the second writer is the test
            yield fake, running


def _states(events: list[StreamResponse]) -> list[str]:
    return [TaskState.Name(e.task.status.state if e.HasField("task") else e.status_update.status.state)
            for e in events if e.HasField("task") or e.HasField("status_update")]


def _failed(task: Task) -> tuple[Task, TaskStatusUpdateEvent]:
    """``task`` failed by the other writer, as the reaper writes it; and its event."""
    failed = Task()
    failed.CopyFrom(task)
    failed.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_FAILED, message=Message(
        role=Role.ROLE_AGENT, message_id=f"{task.id}-ended", task_id=task.id, context_id=task.context_id,
        parts=[Part(text=ENDED)])))
    return failed, TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=failed.status)


def test_a_task_failed_by_another_writer_is_not_completed_by_the_replica_running_it(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    fake, running = replicas
    r0 = running.replicas[0].http_base

    async def scenario() -> None:
        state = RedisState(running.redis.url, LEASE)
        other = RedisTaskStore(state, 3600)
        try:
            async with Receiver(failures=0) as receiver, client_for(r0, True) as client:
                fake.enqueue(Reply.hold())
                hook = SendMessageConfiguration(
                    task_push_notification_config=TaskPushNotificationConfig(url=receiver.url))
                stream = client.send_message(SendMessageRequest(message=user_message("answer later"),
                                                                configuration=hook))
                task_id = await task_id_once_working(stream)
                assert await until(lambda: fake.held == 1), "the LLM call never started"

                # The other writer fails the task while r0 waits on its LLM call.
                owner = (await state.redis.hget(f"{REDIS_PREFIX}a2a:task:{task_id}", "o")).decode()
                context = owner_context(owner)
                stored = await other.get(task_id, context)
                assert stored is not None and stored.task.status.state == TaskState.TASK_STATE_WORKING
                failed, ended = _failed(stored.task)
                version = await other.save(failed, event=ended, prev=stored.task, prev_version=stored.version,
                                           context=context)
                await other.publish(task_id, VersionedEvent(ended, version))
                events_key = f"{REDIS_PREFIX}a2a:events:{task_id}"
                mark = (await state.redis.xrevrange(events_key, count=1))[0][0].decode()

                fake.release()  # r0's chat now finishes: its answer and COMPLETED are queued
                rest = [event async for event in stream]
                # r0 ends the client's stream at its first conflict, then goes through the
                # events its chat had queued: each leaves an entry on the task's stream (the
                # ended task reloaded; without the store's refusal, what it saved instead).
                # How many it had queued when the conflict came is a race (the answer and
                # COMPLETED, or only the first), so wait until at least one came and no more
                # come for a second.
                later: list[StreamResponse] = []
                deadline = time.monotonic() + 15
                settled_at = time.monotonic() + 1.0
                while time.monotonic() < deadline and not (later and time.monotonic() >= settled_at):
                    await asyncio.sleep(0.05)  # a poll that also proves a quiet second: no event for it
                    entries = await state.redis.xrange(events_key, min=f"({mark}")
                    if len(entries) != len(later):
                        later = [StreamResponse.FromString(fields[b"e"]) for _, fields in entries]
                        settled_at = time.monotonic() + 1.0
                assert later, f"r0 never went through its chat's end: {later}"

                assert _states(later) == ["TASK_STATE_FAILED"] * len(later), later
                assert not any(e.HasField("artifact_update") for e in later), later
                assert _states(rest) and set(_states(rest)) == {"TASK_STATE_FAILED"}, rest
                kept = await other.get(task_id, context)
                assert kept is not None and kept.task.status.state == TaskState.TASK_STATE_FAILED
                assert kept.task.status.message.parts[0].text == ENDED
                assert not kept.task.artifacts  # nor did the answer land on the failed task
                got = await client.get_task(GetTaskRequest(id=task_id))
                assert got.status.state == TaskState.TASK_STATE_FAILED
                assert "TASK_STATE_COMPLETED" not in receiver.delivered_states(), receiver.summary()
        finally:
            await other.close()
            await state.close()
        log = running.replicas[0].log()
        assert "Traceback" not in log, log

    asyncio.run(scenario())
