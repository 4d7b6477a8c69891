"""Redis going away DURING an A2A call, on each binding: a ``neuro-san serve`` replica on a real
``redis-server`` (``AGENT_REDIS_URL``), Redis paused with SIGSTOP (its client's socket timeout
then fires) after the call's start-of-call check passed: while an LLM call is held (the
task's saves fail when it is released), or just before a read (GetTask, ListTasks,
CancelTask). Every binding must answer as for a call that finds Redis away at its start
(JSON-RPC 503/-32603/Retry-After, HTTP+JSON 503/UNAVAILABLE/Retry-After, gRPC UNAVAILABLE
with a retry-after trailer); a stream that has started ends with the binding's error
(an SSE ``error`` event, gRPC status UNAVAILABLE); the server logs the outage once, without
tracebacks, and serves again once Redis is back.

Found: mid-call the gRPC binding said INTERNAL and HTTP+JSON 500 INTERNAL without
Retry-After; the a2a-sdk logged a traceback per call. The replica's lease is an hour, so
that nothing but the calls themselves (no heartbeat) touches Redis: the outage is met
mid-call, never found by the start-of-call check first.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import httpx
import pytest
from a2a.client import Client
from a2a.types import GetTaskRequest, SendMessageRequest, TaskState, a2a_pb2, a2a_pb2_grpc

from gateway.a2a.outage import STATE_UNAVAILABLE
from tests.a2a_support import user_message
from tests.fakes.fake_llm import FakeLlmServer, Reply
from tests.gateway.a2a.test_a2a_grpc import grpc_client
from tests.support.cluster import Cluster, cluster, tools_missing
from tests.support.fake_thread import FakeInThread
from tests.support.waits import until
from tests.system.test_scale_out import client_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(tools_missing() is not None, reason=str(tools_missing()))]

BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
#: What each binding answers a call that needs Redis while it is away (JSON-RPC: HTTP status,
#: Retry-After, error; HTTP+JSON: HTTP status, Retry-After, body; gRPC: code, details, retry-after).
UNAVAILABLE: dict[str, tuple[Any, ...]] = {
    "JSONRPC": (503, "5", {"code": -32603, "message": STATE_UNAVAILABLE}),
    "HTTP+JSON": (503, "5", {"error": {"code": 14, "status": "UNAVAILABLE", "message": STATE_UNAVAILABLE,
                                       "details": []}}),
    "GRPC": ("UNAVAILABLE", STATE_UNAVAILABLE, "5"),
}
#: A generous bound for "did not hang" (each failed Redis command takes its 1 s socket timeout).
WITHIN = 20.0


@dataclass
class Rig:
    fake: FakeLlmServer
    running: Cluster

    @property
    def pid(self) -> int:
        assert self.running.redis.process is not None
        return self.running.redis.process.pid

    @property
    def log(self) -> str:
        return self.running.replicas[0].log()


@pytest.fixture(scope="module")
def one_replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder: Path = tmp_path_factory.mktemp("outage")
    with FakeInThread() as fake:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(max_attempts=1)),
               "AGENT_REPLICA_LEASE_SECONDS": "3600"}  # no heartbeat meets the outage first
        with cluster(folder, env, replicas=1) as running:
            yield Rig(fake, running)


def _message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


class Wire(Protocol):
    """One binding spoken on the wire; each call gives ("ok", task id) or the binding's error;
    a stream, its task's id and its end."""

    async def send(self, text: str) -> tuple[Any, ...]: ...
    async def get(self, task_id: str) -> tuple[Any, ...]: ...
    async def list_tasks(self) -> tuple[Any, ...]: ...
    async def cancel(self, task_id: str) -> tuple[Any, ...]: ...
    async def stream(self, text: str, seen: list[str]) -> tuple[str, tuple[Any, ...]]: ...


class JsonRpcWire:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def _call(self, method: str, params: dict[str, Any]) -> tuple[Any, ...]:
        reply = await self.http.post("/a2a/echo", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
        body = reply.json()
        if "result" in body:
            return "ok", body["result"].get("task", body["result"]).get("id")
        return reply.status_code, reply.headers.get("Retry-After"), body["error"]

    async def send(self, text: str) -> tuple[Any, ...]:
        return await self._call("SendMessage", {"message": _message(text)})

    async def get(self, task_id: str) -> tuple[Any, ...]:
        return await self._call("GetTask", {"id": task_id})

    async def list_tasks(self) -> tuple[Any, ...]:
        return await self._call("ListTasks", {})

    async def cancel(self, task_id: str) -> tuple[Any, ...]:
        return await self._call("CancelTask", {"id": task_id})

    async def stream(self, text: str, seen: list[str]) -> tuple[str, tuple[Any, ...]]:
        body = {"jsonrpc": "2.0", "id": 8, "method": "SendStreamingMessage", "params": {"message": _message(text)}}
        async with self.http.stream("POST", "/a2a/echo", json=body) as reply:
            events = await _sse(reply, seen)
        return events[0][1]["result"]["task"]["id"], (reply.status_code, events[-1])


class RestWire:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    @staticmethod
    def _outcome(reply: httpx.Response) -> tuple[Any, ...]:
        body = reply.json()
        if reply.status_code == 200:
            return "ok", body.get("task", body).get("id")
        return reply.status_code, reply.headers.get("Retry-After"), body

    async def send(self, text: str) -> tuple[Any, ...]:
        return self._outcome(await self.http.post("/a2a/echo/rest/message:send", json={"message": _message(text)}))

    async def get(self, task_id: str) -> tuple[Any, ...]:
        return self._outcome(await self.http.get(f"/a2a/echo/rest/tasks/{task_id}"))

    async def list_tasks(self) -> tuple[Any, ...]:
        return self._outcome(await self.http.get("/a2a/echo/rest/tasks"))

    async def cancel(self, task_id: str) -> tuple[Any, ...]:
        return self._outcome(await self.http.post(f"/a2a/echo/rest/tasks/{task_id}:cancel", json={}))

    async def stream(self, text: str, seen: list[str]) -> tuple[str, tuple[Any, ...]]:
        async with self.http.stream("POST", "/a2a/echo/rest/message:stream", json={"message": _message(text)}) as reply:
            events = await _sse(reply, seen)
        return events[0][1]["task"]["id"], (reply.status_code, events[-1])


async def _sse(reply: httpx.Response, seen: list[str]) -> list[tuple[str, Any]]:
    """The (event, data) of an SSE response; ``seen`` gets each event's name as it arrives."""
    events: list[tuple[str, Any]] = []
    name = "message"
    async for line in reply.aiter_lines():
        if line.startswith("event:"):
            name = line.partition(":")[2].strip()
        elif line.startswith("data:"):
            events.append((name, json.loads(line.partition(":")[2])))
            seen.append(name)
            name = "message"
    return events


def _status(error: grpc.aio.AioRpcError) -> tuple[Any, ...]:
    return error.code().name, error.details(), dict(error.trailing_metadata() or ()).get("retry-after")


#: The binding serves A2A 1.0 only and refuses a call without the header (as 0.3).
A2A_1_0 = (("a2a-version", "1.0"),)


class GrpcWire:
    """The a2a-sdk's generated stub, to see the raw status (as A2A 1.0, which the binding checks)."""

    def __init__(self, stub: a2a_pb2_grpc.A2AServiceStub) -> None:
        self.stub = stub

    @staticmethod
    async def _outcome(call: Awaitable[Any]) -> tuple[Any, ...]:
        try:
            reply = await call
        except grpc.aio.AioRpcError as error:
            return _status(error)
        task = reply.task if isinstance(reply, a2a_pb2.SendMessageResponse) else reply
        return "ok", getattr(task, "id", None)

    async def send(self, text: str) -> tuple[Any, ...]:
        return await self._outcome(self.stub.SendMessage(
            a2a_pb2.SendMessageRequest(tenant="echo", message=user_message(text)), timeout=WITHIN, metadata=A2A_1_0))

    async def get(self, task_id: str) -> tuple[Any, ...]:
        request = a2a_pb2.GetTaskRequest(tenant="echo", id=task_id)
        return await self._outcome(self.stub.GetTask(request, timeout=WITHIN, metadata=A2A_1_0))

    async def list_tasks(self) -> tuple[Any, ...]:
        request = a2a_pb2.ListTasksRequest(tenant="echo")
        return await self._outcome(self.stub.ListTasks(request, timeout=WITHIN, metadata=A2A_1_0))

    async def cancel(self, task_id: str) -> tuple[Any, ...]:
        return await self._outcome(self.stub.CancelTask(a2a_pb2.CancelTaskRequest(tenant="echo", id=task_id),
                                                        timeout=WITHIN, metadata=A2A_1_0))

    async def stream(self, text: str, seen: list[str]) -> tuple[str, tuple[Any, ...]]:
        call = self.stub.SendStreamingMessage(a2a_pb2.SendMessageRequest(tenant="echo", message=user_message(text)),
                                              timeout=WITHIN, metadata=A2A_1_0)
        task_id = ""
        try:
            async for item in call:
                task_id = task_id or item.task.id
                seen.append(str(item.WhichOneof("payload")))
        except grpc.aio.AioRpcError as error:
            return task_id, _status(error)
        return task_id, ("ended without an error",)


@asynccontextmanager
async def wire(binding: str, one_replica: Rig) -> AsyncIterator[Wire]:
    replica = one_replica.running.replicas[0]
    if binding == "GRPC":
        async with grpc.aio.insecure_channel(replica.grpc_target) as channel:
            yield GrpcWire(a2a_pb2_grpc.A2AServiceStub(channel))
        return
    async with httpx.AsyncClient(base_url=replica.http_base, timeout=WITHIN, headers={"A2A-Version": "1.0"}) as http:
        yield JsonRpcWire(http) if binding == "JSONRPC" else RestWire(http)


@asynccontextmanager
async def sdk_client(binding: str, one_replica: Rig) -> AsyncIterator[Client]:
    """The official a2a-sdk client of the echo network over ``binding``."""
    base = one_replica.running.replicas[0].http_base
    if binding == "GRPC":
        async with grpc_client(f"{base}/a2a/echo") as client:
            yield client
    else:
        async with client_for(base, False, binding=binding) as client:
            yield client


@asynccontextmanager
async def redis_paused(one_replica: Rig) -> AsyncIterator[None]:
    """Redis silent (SIGSTOP) for the block: commands time out as on a dead network."""
    os.kill(one_replica.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(one_replica.pid, signal.SIGCONT)


@asynccontextmanager
async def redis_stopped(one_replica: Rig) -> AsyncIterator[None]:
    """Redis killed for the block (connections refused), then started again, empty."""
    one_replica.running.redis.stop()
    try:
        yield
    finally:
        one_replica.running.redis.start()


async def _mid_call(one_replica: Rig, call: Callable[[], Awaitable[tuple[Any, ...]]], held: bool = False,
                    outage: Callable[[Rig], Any] = redis_paused) -> tuple[Any, ...]:
    """``call``'s answer with Redis away after its start (while its LLM call is held, if
    ``held``: then released, so the task's saves fail)."""
    if not held:
        async with outage(one_replica):
            return await asyncio.wait_for(call(), WITHIN)
    one_replica.fake.enqueue(Reply.hold())
    pending = asyncio.ensure_future(call())
    try:
        assert await until(lambda: one_replica.fake.held == 1, WITHIN), "the LLM call never started"
        async with outage(one_replica):
            one_replica.fake.release()
            return await asyncio.wait_for(pending, WITHIN)
    finally:
        one_replica.fake.release()
        pending.cancel()


async def _served_again(binding: str, one_replica: Rig, earlier: str = "") -> a2a_pb2.Task:
    """Redis is back: the SDK client's calls work (a task sent and read); the ``earlier`` task, read."""
    async with sdk_client(binding, one_replica) as client:
        events = [e async for e in client.send_message(SendMessageRequest(message=user_message("back again")))]
        task = events[-1].task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert (await client.get_task(GetTaskRequest(id=task.id))).id == task.id
        return await client.get_task(GetTaskRequest(id=earlier or task.id))


def _logged_once_without_tracebacks(one_replica: Rig) -> None:
    log = one_replica.log
    assert "Traceback" not in log, log
    assert "never retrieved" not in log, log
    assert '"level": "ERROR"' not in log, log
    # The state's one WARNING per outage, and one when it is over: not one per call.
    assert log.count("is unreachable") == log.count("state is back") > 0, log


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_call_meeting_a_redis_outage_is_answered_as_one_finding_it_at_its_start(
    one_replica: Rig, binding: str,
) -> None:
    expected = UNAVAILABLE[binding]

    async def scenario() -> None:
        async with wire(binding, one_replica) as calls:
            done = await calls.send("before the outage")
            assert done[0] == "ok", done
            task_id = str(done[1])
            for name, call, held in (("SendMessage", lambda: calls.send("held"), True),
                                     ("GetTask", lambda: calls.get(task_id), False),
                                     ("ListTasks", calls.list_tasks, False),
                                     ("CancelTask", lambda: calls.cancel(task_id), False)):
                assert await _mid_call(one_replica, call, held) == expected, name
                async with redis_paused(one_replica):  # now found at the start of the call: the same answer
                    assert await asyncio.wait_for(call(), WITHIN) == expected, name
                assert (await calls.get(task_id))[0] == "ok"  # Redis is back
        earlier = await _served_again(binding, one_replica, task_id)
        assert earlier.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())
    _logged_once_without_tracebacks(one_replica)


def _sse_error(binding: str, end: tuple[Any, ...]) -> tuple[str, Any]:
    """The last SSE event of a JSON-RPC / HTTP+JSON stream, as (event, error without details)."""
    status, (name, data) = end
    assert status == 200  # the stream had started: its HTTP status was sent
    error = dict(data["error"])
    details = error.pop("data" if binding == "JSONRPC" else "details")
    assert [(d["@type"], d["reason"]) for d in details] == [(ERROR_INFO, "STATE_UNAVAILABLE")]
    return name, error


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_stream_meeting_a_redis_outage_ends_with_the_binding_s_unavailable(one_replica: Rig, binding: str) -> None:
    async def scenario() -> tuple[Any, ...]:
        """The stream's end; its task, whose saves failed, is failed with the reason once Redis
        is back (the a2a-sdk ended its run: left ``working``, it would never end)."""
        async with wire(binding, one_replica) as calls:
            seen: list[str] = []
            one_replica.fake.enqueue(Reply.hold())
            pending = asyncio.ensure_future(calls.stream("stream through an outage", seen))
            try:
                # The task, then working.
                assert await until(lambda: one_replica.fake.held == 1 and len(seen) >= 2, WITHIN), seen
                async with redis_paused(one_replica):
                    one_replica.fake.release()
                    task_id, end = await asyncio.wait_for(pending, WITHIN)
            finally:
                one_replica.fake.release()
                pending.cancel()
        lost = await _served_again(binding, one_replica, task_id)
        assert lost.status.state == TaskState.TASK_STATE_FAILED
        assert "(Redis) was unreachable while this task ran" in lost.status.message.parts[0].text
        return end

    end = asyncio.run(scenario())
    if binding == "GRPC":
        assert end == UNAVAILABLE["GRPC"]
    elif binding == "JSONRPC":
        assert _sse_error(binding, end) == ("error", {"code": -32603, "message": STATE_UNAVAILABLE})
    else:  # the a2a-sdk's shape of an HTTP+JSON stream's error: the HTTP status as the code
        assert _sse_error(binding, end) == ("error", {"code": 503, "status": "UNAVAILABLE",
                                                      "message": STATE_UNAVAILABLE})
    _logged_once_without_tracebacks(one_replica)


@pytest.mark.parametrize("binding", BINDINGS)
def test_redis_stopped_during_a_call_is_answered_the_same_and_a_restarted_redis_serves(
    one_replica: Rig, binding: str,
) -> None:
    """Killed rather than paused: the commands are refused, not timed out; then Redis starts
    again, empty (no persistence)."""
    async def scenario() -> None:
        async with wire(binding, one_replica) as calls:
            assert (await calls.send("before the outage"))[0] == "ok"
            assert await _mid_call(one_replica, lambda: calls.send("held"), held=True, outage=redis_stopped) == \
                UNAVAILABLE[binding]
        await _served_again(binding, one_replica)

    asyncio.run(scenario())
    _logged_once_without_tracebacks(one_replica)
