"""Three ``neuro-san serve`` replicas behind Debian's haproxy (round-robin, no stickiness)
sharing one real ``redis-server`` (``AGENT_REDIS_URL``): A2A tasks, their events, their
contextIds and cancellations, and MCP cancellations reach the replica that needs them;
REST, gRPC and the playground are unchanged; a replica killed with SIGKILL leaves its
tasks ``failed``; Redis stopped mid-test fails only what needs it, and recovers.

The cross-replica steps name the replica they land on (each replica's own port), so that
"another replica" is certain; the balancer test shows the same through haproxy, whose
``X-Served-By`` header says which replica answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import httpx
import pytest
import redis.asyncio as aioredis
from a2a.client import Client, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError
from aiohttp import web

from gateway.state.redis_state import PREFIX as REDIS_PREFIX
from tests.a2a_support import send, user_message
from tests.fakes.fake_llm import FakeLlmServer, RecordedRequest, Reply
from tests.support import grpc_calls as calls
from tests.support.cluster import SERVED_BY, Cluster, cluster, tools_missing
from tests.support.fake_thread import FakeInThread
from tests.support.waits import until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(tools_missing() is not None, reason=str(tools_missing()))]

#: Seconds a replica's lease lasts: the bound on how long a dead replica's task stays working.
LEASE = 2.0
MCP_HEADERS = {"MCP-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"}


def _slow(request: RecordedRequest) -> Reply | None:
    return Reply.stall(60) if request.last_input_text().startswith("slow") else None


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeLlmServer, Cluster]]:
    folder: Path = tmp_path_factory.mktemp("cluster")
    with FakeInThread(rule=_slow) as fake:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(max_attempts=1)),
               "AGENT_REPLICA_LEASE_SECONDS": str(LEASE),
               "AGENT_A2A_PUSH_ALLOWED_NETWORKS": "127.0.0.0/8"}  # the test's webhook receiver
        with cluster(folder, env) as running:
            yield fake, running


@asynccontextmanager
async def client_for(
    base: str, streaming: bool, served: list[str] | None = None, binding: str = "JSONRPC"
) -> AsyncIterator[Client]:
    """The SDK client of the echo network at ``base`` over ``binding``; ``served`` collects X-Served-By."""
    async def note(response: httpx.Response) -> None:
        if served is not None and SERVED_BY in response.headers:
            served.append(response.headers[SERVED_BY])

    async with httpx.AsyncClient(timeout=30, event_hooks={"response": [note]}) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding])
        client = await create_client(f"{base}/a2a/echo", config)
        try:
            yield client
        finally:
            await client.close()


async def _collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


async def task_id_once_working(stream: AsyncIterator[StreamResponse]) -> str:
    """The task id of a streamed send, read up to its first status update (working); the
    stream stays open for the caller."""
    task_id = ""
    async for event in stream:
        if event.HasField("task"):
            task_id = event.task.id
        if event.HasField("status_update"):
            break
    return task_id


def _bases(running: Cluster) -> list[str]:
    return [replica.http_base for replica in running.replicas]


def test_an_a2a_task_is_read_and_its_conversation_continued_on_other_replicas(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    fake, running = replicas
    r0, r1, r2 = _bases(running)
    word = f"pineapple-{uuid.uuid4().hex[:6]}"

    async def scenario() -> None:
        async with client_for(r0, False) as c0, client_for(r1, False) as c1, client_for(r2, False) as c2:
            events = await send(c0, user_message(f"remember {word}"))
            task = events[-1].task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            got = await c1.get_task(GetTaskRequest(id=task.id))
            assert got.status.state == TaskState.TASK_STATE_COMPLETED
            assert [p.text for a in got.artifacts for p in a.parts] == [p.text for a in task.artifacts
                                                                        for p in a.parts]
            # Without credentials a caller lists only the context it names (issue 33 item 8).
            listed = await c2.list_tasks(ListTasksRequest(context_id=task.context_id))
            assert task.id in [t.id for t in listed.tasks]
            await send(c2, user_message("and now?", context_id=task.context_id))  # contextId alone
        last = list(fake.requests)[-1]
        assert last.last_input_text() == "and now?"
        assert word in json.dumps(last.body)  # r2 continued the conversation r0 began

    asyncio.run(scenario())


def test_resubscribe_and_cancel_on_other_replicas_stop_the_llm_call_where_it_runs(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    fake, running = replicas
    r0, r1, r2 = _bases(running)

    async def scenario() -> None:
        before_requests, before_cancelled = fake.request_count, fake.handlers_cancelled
        async with Receiver(failures=0) as receiver, client_for(r0, True) as c0, client_for(r1, True) as c1, \
                client_for(r2, False) as c2:
            hook = SendMessageConfiguration(task_push_notification_config=TaskPushNotificationConfig(url=receiver.url))
            stream = c0.send_message(SendMessageRequest(message=user_message("slow: take your time"),
                                                        configuration=hook))
            task_id = await task_id_once_working(stream)
            assert await until(lambda: fake.request_count > before_requests), "the LLM call never started"
            subscription = c1.subscribe(SubscribeToTaskRequest(id=task_id))
            # r1 has read the task (still working) once it sends it; its tail reads the task's
            # event stream from the start, so the cancel below cannot come too early for it.
            seen = [await asyncio.wait_for(anext(subscription), 15)]
            cancelled = await c2.cancel_task(CancelTaskRequest(id=task_id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            seen += await asyncio.wait_for(_collect(subscription), 15)
            assert seen[0].task.id == task_id
            assert seen[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
            await stream.aclose()  # type: ignore[attr-defined]
            # r0, running the chat, dropped its LLM connection (the fake's handler saw the client go).
            assert await until(lambda: fake.handlers_cancelled > before_cancelled)
            assert (await c2.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_CANCELED
            # The webhook hears of it too, from r2 which wrote the cancel.
            assert await until(lambda: "TASK_STATE_CANCELED" in receiver.delivered_states())
        assert "cancelled from another replica" in running.replicas[0].log()

    asyncio.run(scenario())


def test_an_mcp_cancellation_landing_on_another_replica_stops_the_call(replicas: tuple[FakeLlmServer, Cluster]) -> None:
    fake, running = replicas
    r0, r1, _ = _bases(running)

    async def scenario() -> None:
        before_requests, before_cancelled = fake.request_count, fake.handlers_cancelled
        headers = {**MCP_HEADERS, "Mcp-Session-Id": uuid.uuid4().hex}
        call = {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"user_message": {"text": "slow mcp"}}}}
        async with aiohttp.ClientSession(headers=headers) as session:
            post = asyncio.create_task(session.post(f"{r0}/mcp", json=call))
            assert await until(lambda: fake.request_count > before_requests)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}}
            async with session.post(f"{r1}/mcp", json=cancel) as reply:
                assert reply.status == 202
            response = await asyncio.wait_for(post, 15)
            body = await response.json()
            assert body["error"]["code"] == -32800 and body["id"] == 41
        assert await until(lambda: fake.handlers_cancelled > before_cancelled)

    asyncio.run(scenario())


def test_through_the_balancer_every_protocol_works_whichever_replica_answers(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    _, running = replicas
    served: list[str] = []

    async def a2a() -> None:
        for binding in ("JSONRPC", "HTTP+JSON"):
            async with client_for(running.http_base, False, served, binding) as client:
                await a2a_turns(client)

    async def a2a_turns(client: Client) -> None:
        for turn in range(3):
            events = await send(client, user_message(f"turn {turn}"))
            task = events[-1].task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert (await client.get_task(GetTaskRequest(id=task.id))).id == task.id
            await send(client, user_message("again", context_id=task.context_id))

    asyncio.run(a2a())
    assert len(set(served)) == 3, served  # round-robin, no stickiness: every replica answered some

    with httpx.Client(base_url=running.http_base, timeout=30) as http:
        rest = http.post("/api/v1/echo/streaming_chat", json={"user_message": {"text": "over REST"}})
        assert rest.status_code == 200 and "over REST" in rest.text
        page = http.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 200 and b"/playground/js/main.js" in page.content
    with grpc.insecure_channel(running.grpc_target) as channel:  # haproxy in TCP mode
        replies = calls.streaming_chat(channel, "echo", calls.chat_request("over gRPC"), qualified=True)
        assert any("over gRPC" in r.response.text for r in replies)


def test_with_redis_stopped_a2a_says_so_other_chats_go_on_and_it_recovers(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    _, running = replicas
    r0 = running.replicas[0].http_base
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}
    headers = {"A2A-Version": "1.0"}
    running.redis.stop()
    try:
        with httpx.Client(base_url=r0, timeout=10) as http:
            started = time.monotonic()
            refused = http.post("/a2a/echo", json=message, headers=headers)
            assert time.monotonic() - started < 8, "a request waited on the missing Redis"
            assert refused.status_code == 503
            assert "Redis" in refused.json()["error"]["message"]
            rest = http.post("/api/v1/echo/streaming_chat", json={"user_message": {"text": "still here"}})
            assert rest.status_code == 200 and "still here" in rest.text
    finally:
        running.redis.start()
    assert "WARNING" in running.replicas[0].log() and "unreachable" in running.replicas[0].log()
    with httpx.Client(base_url=r0, timeout=10) as http:
        deadline = time.monotonic() + 10
        while True:
            answer = http.post("/a2a/echo", json=message, headers=headers)
            if answer.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "is back" in running.replicas[0].log()


def test_replicas_whose_leases_redis_lost_are_not_taken_for_dead(replicas: tuple[FakeLlmServer, Cluster]) -> None:
    """Redis restarted without persistence has lost every replica's lease; each live replica
    writes its own back at its next beat (within a third of a lease). Meanwhile the others
    must not fail its tasks as a dead replica's. They did: a task started just after a
    restart could end FAILED, written by another replica, its webhook never told COMPLETED
    (the push test below runs just after this module's restart of Redis). Here the leases
    are deleted again and again for a quarter of a lease while a task runs on r0, and the
    task is read on r1 and r2 meanwhile."""
    fake, running = replicas
    r0, r1, r2 = _bases(running)

    async def scenario() -> None:
        before = fake.request_count
        async with client_for(r0, True) as c0, client_for(r1, False) as c1, client_for(r2, False) as c2:
            stream = c0.send_message(SendMessageRequest(message=user_message("slow: outlive the leases")))
            task_id = await task_id_once_working(stream)
            assert await until(lambda: fake.request_count > before), "the LLM call never started"
            leases = aioredis.from_url(running.redis.url)
            seen: list[TaskState] = []
            try:
                stop_at = time.monotonic() + LEASE / 4
                while time.monotonic() < stop_at:
                    for key in await leases.keys(f"{REDIS_PREFIX}replica:*"):
                        await leases.delete(key)  # as a restart does; the owner writes its own back
                    for client in (c1, c2):  # reading a task looks whether its replica lives
                        seen.append((await client.get_task(GetTaskRequest(id=task_id))).status.state)
            finally:
                await leases.aclose()
            # The behaviour under test, not an ordering: a whole lease passes, so the replicas'
            # own reapers (every half lease) have looked too, and found the replica alive.
            await asyncio.sleep(LEASE)
            seen.append((await c1.get_task(GetTaskRequest(id=task_id))).status.state)
            assert set(seen) == {TaskState.TASK_STATE_WORKING}, [TaskState.Name(s) for s in seen]
            cancelled = await c2.cancel_task(CancelTaskRequest(id=task_id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            await stream.aclose()  # type: ignore[attr-defined]
        assert "stopped before it ended" not in "".join(r.log() for r in running.replicas)

    asyncio.run(scenario())


class Receiver:
    """A webhook on loopback: answers 503 to the first ``failures`` posts (all, if negative)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.posts: list[tuple[int, dict[str, str], dict[str, Any]]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        status = 503 if self.failures < 0 or len(self.posts) < self.failures else 200
        self.posts.append((status, dict(request.headers), await request.json()))
        return web.Response(status=status)

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/hook"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    def delivered_states(self) -> list[str]:
        return [state for status, state in self.summary() if status == 200 and state]

    def summary(self) -> list[tuple[int, str | None]]:
        """Each post's answer and the task state it told (None: an artifact), for failure messages."""
        return [(status, body.get("statusUpdate", body.get("task", {})).get("status", {}).get("state"))
                for status, _, body in self.posts]


def test_push_notifications_are_retried_kept_across_replicas_and_stop_on_delete(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    _, running = replicas
    r0, r1, r2 = _bases(running)

    async def scenario() -> None:
        async with Receiver(failures=2) as receiver, client_for(r0, False) as c0, \
                client_for(r1, False) as c1, client_for(r2, False) as c2:
            hook = TaskPushNotificationConfig(url=receiver.url, token="tok-1")
            events = [e async for e in c0.send_message(SendMessageRequest(
                message=user_message("push me"), configuration=SendMessageConfiguration(
                    task_push_notification_config=hook)))]
            task = events[-1].task
            assert await until(lambda: "TASK_STATE_COMPLETED" in receiver.delivered_states()), \
                (TaskState.Name(task.status.state), receiver.summary())
            assert [p[0] for p in receiver.posts[:3]] == [503, 503, 200]  # retried after its 5xx
            assert {p[1].get("X-A2A-Notification-Token") for p in receiver.posts} == {"tok-1"}
            states = receiver.delivered_states()
            assert states[0] == "TASK_STATE_SUBMITTED" and states[-1] == "TASK_STATE_COMPLETED"
            # Set on r0, read on r1 and r2.
            listed = await c1.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id))
            assert [c.url for c in listed.configs] == [receiver.url]
            got = await c2.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id=listed.configs[0].id))
            assert got.token == "tok-1"
            for url in ("http://169.254.169.254/latest/meta-data", "http://10.0.0.7/hook", "http://192.168.1.1/",
                        "http://[::1]:8080/hook", "http://[::ffff:169.254.169.254]/", "ftp://127.0.0.1/hook"):
                with pytest.raises(InvalidParamsError, match="refused"):
                    await c1.create_task_push_notification_config(
                        TaskPushNotificationConfig(task_id=task.id, url=url))

        async with Receiver(failures=-1) as failing, client_for(r0, False) as c0, client_for(r1, False) as c1:
            hook = TaskPushNotificationConfig(url=failing.url, id="doomed")
            events = [e async for e in c0.send_message(SendMessageRequest(
                message=user_message("push me again"), configuration=SendMessageConfiguration(
                    task_push_notification_config=hook)))]
            task = events[-1].task
            assert await until(lambda: len(failing.posts) >= 2)  # retrying
            await c1.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="doomed"))
            stopped_at = len(failing.posts)
            # The behaviour under test: for longer than the next backoffs, nothing more arrives
            # (an absence has no event to wait for).
            await asyncio.sleep(3)
            assert len(failing.posts) <= stopped_at + 1  # at most the attempt already on its way
            listed = await c1.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id))
            assert list(listed.configs) == []

    asyncio.run(scenario())


class PausingReceiver(Receiver):
    """Holds its first post until ``release`` is set, then pauses ``redis`` (SIGSTOP) for
    ``pause`` seconds and answers that post 503: the sender's retry finds Redis silent."""

    def __init__(self, redis_pid: int, pause: float) -> None:
        super().__init__(failures=1)
        self.redis_pid, self.pause = redis_pid, pause
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        if not self.posts:
            await self.release.wait()
            os.kill(self.redis_pid, signal.SIGSTOP)
            asyncio.get_running_loop().call_later(self.pause, os.kill, self.redis_pid, signal.SIGCONT)
        return await super().handle(request)


def test_a_redis_pause_during_push_retries_does_not_lose_the_task_s_later_notifications(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    """The sender re-reads the configurations (in Redis) before each attempt. A read that
    failed (Redis silent past its socket timeout) stopped the task's delivery for good: the
    events queued behind, COMPLETED among them, were dropped. Now it is a failed attempt,
    retried as a 5xx is, and the events behind it are sent. Redis is paused (not stopped:
    the configurations must survive) for longer than the client's socket timeout, after
    the task has ended and while its first notification waits for its answer."""
    _, running = replicas
    r0 = running.replicas[0].http_base
    assert running.redis.process is not None
    pid = running.redis.process.pid

    async def scenario() -> None:
        receiver = PausingReceiver(pid, pause=2.5)
        async with receiver, client_for(r0, False) as c0:
            try:
                hook = TaskPushNotificationConfig(url=receiver.url)
                events = [e async for e in c0.send_message(SendMessageRequest(
                    message=user_message("push me through a pause"), configuration=SendMessageConfiguration(
                        task_push_notification_config=hook)))]
                assert events[-1].task.status.state == TaskState.TASK_STATE_COMPLETED
                receiver.release.set()  # every event of the task is queued on r0 by now
                # The retries' backoffs (0.25 + 0.5 + 1 + 2 s) outlast the pause; each failed read took 1 s.
                assert await until(lambda: "TASK_STATE_COMPLETED" in receiver.delivered_states()), receiver.summary()
                states = receiver.delivered_states()
                assert states[0] == "TASK_STATE_SUBMITTED" and states[-1] == "TASK_STATE_COMPLETED"
            finally:
                os.kill(pid, signal.SIGCONT)
        assert "was not sent" not in running.replicas[0].log()

    asyncio.run(scenario())


def test_a_replica_killed_mid_task_leaves_it_failed_and_the_others_serve(
    replicas: tuple[FakeLlmServer, Cluster],
) -> None:
    """Last in this module: it kills a replica."""
    fake, running = replicas
    victim = running.replicas[2]
    r0 = running.replicas[0].http_base

    async def scenario() -> None:
        before = fake.request_count
        async with Receiver(failures=0) as receiver, client_for(victim.http_base, True) as doomed, \
                client_for(r0, False) as survivor:
            hook = SendMessageConfiguration(task_push_notification_config=TaskPushNotificationConfig(url=receiver.url))
            stream = doomed.send_message(SendMessageRequest(message=user_message("slow: never finishes"),
                                                            configuration=hook))
            task_id = await task_id_once_working(stream)
            assert await until(lambda: fake.request_count > before)
            os.kill(victim.process.pid, signal.SIGKILL)
            victim.process.wait(5)
            with_reason = None
            deadline = time.monotonic() + 6 * LEASE
            while time.monotonic() < deadline:
                got = await survivor.get_task(GetTaskRequest(id=task_id))
                if got.status.state == TaskState.TASK_STATE_FAILED:
                    with_reason = got
                    break
                assert got.status.state == TaskState.TASK_STATE_WORKING
                await asyncio.sleep(0.2)
            assert with_reason is not None, "the dead replica's task never ended"
            assert "stopped before it ended" in with_reason.status.message.parts[0].text
            assert await until(lambda: "TASK_STATE_FAILED" in receiver.delivered_states())  # told by a survivor
        # The balancer and the other replicas go on.
        async with client_for(running.http_base, False) as client:
            for _ in range(3):
                events = await send(client, user_message("after the kill"))
                assert events[-1].task.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())
