"""A2A ``ListTasks`` with access control off (issue 33 item 8): a caller without credentials
has no identity, so it lists nothing without a ``contextId`` filter, and with one only the
tasks of that context; a caller with credentials lists its own tasks as before. One real
server in memory mode; the SDK client (JSON-RPC) and the HTTP+JSON binding; the Redis
store (a real redis-server) alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from a2a.server.cluster import TaskVersion
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus

from gateway.a2a.redis_tasks import RedisTaskStore, owner_context
from gateway.state.redis_state import RedisState
from tests.a2a_support import a2a_client, send, user_message
from tests.support.cluster import RedisProcess, tools_missing
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow


def test_callers_without_credentials_do_not_see_each_others_tasks(server: ServerProcess) -> None:
    url = f"{server.http_base}/a2a/echo"

    async def scenario() -> None:
        async with a2a_client(url, streaming=False) as alice, a2a_client(url, streaming=False) as bob, \
                a2a_client(url, streaming=False, headers={"Authorization": "Bearer carol"}) as carol:
            mine = (await send(alice, user_message("alice's secret")))[0].task
            theirs = (await send(bob, user_message("bob's secret")))[0].task
            own = (await send(carol, user_message("carol's")))[0].task
            assert list((await alice.list_tasks(ListTasksRequest())).tasks) == []
            named = await alice.list_tasks(ListTasksRequest(context_id=mine.context_id))
            assert [task.id for task in named.tasks] == [mine.id]
            assert theirs.id not in [task.id for task in named.tasks]
            # Credentials (any, with keys off) are an identity: that caller lists its own tasks.
            assert [task.id for task in (await carol.list_tasks(ListTasksRequest())).tasks] == [own.id]

    asyncio.run(scenario())
    rest = httpx.get(f"{url}/rest/tasks", headers={"A2A-Version": "1.0"}, timeout=10)
    assert rest.status_code == 200 and rest.json().get("tasks", []) == []


def test_the_redis_store_lists_the_same_way(tmp_path: Path) -> None:
    missing = tools_missing()
    if missing is not None:
        pytest.skip(missing)
    redis = RedisProcess(tmp_path)
    redis.start()

    async def scenario() -> None:
        state = RedisState(redis.url, 5)
        store = RedisTaskStore(state, 3600)
        anonymous, keyed = owner_context(":echo"), owner_context("k:echo")
        try:
            for task_id, context_id, owner in (("a1", "ca", anonymous), ("b1", "cb", anonymous), ("k1", "ck", keyed)):
                task = Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
                await store.save(task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=owner)
            assert list((await store.list(ListTasksRequest(), anonymous)).tasks) == []
            named = await store.list(ListTasksRequest(context_id="ca"), anonymous)
            assert [task.id for task in named.tasks] == ["a1"]
            assert [task.id for task in (await store.list(ListTasksRequest(), keyed)).tasks] == ["k1"]
        finally:
            await state.close()

    try:
        asyncio.run(scenario())
    finally:
        redis.stop()
