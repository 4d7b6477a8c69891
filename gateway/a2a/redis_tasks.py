"""A2A tasks shared by every replica on Redis (``AGENT_REDIS_URL``).

The a2a-sdk's request handler has cluster interfaces: a :class:`VersionedTaskStore`
(compare-and-swap on a version) and a :class:`TaskEventStream` (events to the replicas
that did not run the task). These are their Redis implementations:

- a task is a hash ``a2a:task:<id>`` (owner, version, state, the Task proto) written by
  one Lua script that checks the version (and the owner), so two replicas never overwrite
  each other, and refuses any write to a task that has ended (its state is final); it
  expires (``AGENT_A2A_TASK_TTL_SECONDS``), and each owner (API key and network) keeps
  at most :data:`MAX_TASKS_PER_OWNER` (the oldest go first);
- its events are a Redis stream ``a2a:events:<id>`` read from the start and filtered by
  version, so a replica that resubscribes after reading the task misses nothing;
- a cancellation written on another replica is also published on the cancellation
  channel: the replica running the chat stops it (and its LLM calls) at once rather than
  at its next update;
- the tasks in progress are listed in ``a2a:running`` with the replica running each; a
  task whose replica lost its lease (died) is failed, with the reason, by the first
  replica that notices (every replica looks every half lease; reading or tailing the
  task looks too). A lease found missing is not yet a death: a Redis restarted without
  persistence has lost every lease, and each live replica writes its own back only at its
  next beat; so a replica is dead once its lease has stayed missing for a whole lease
  (:meth:`RedisTaskStore._replica_dead`);
- Redis away is :class:`~gateway.a2a.outage.StoreUnavailable` (each binding's "unavailable");
  a task of this replica whose save failed then (which ends its run) is failed, with the
  reason, once Redis is back (by the next look, or by reading it).

Without ``AGENT_REDIS_URL`` the tasks stay in memory (:mod:`gateway.a2a.tasks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.tasks import InMemoryTaskStore, PushNotificationSender
from a2a.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from gateway.a2a.outage import StoreUnavailable, guarded
from gateway.a2a.tasks import OWNER_KEY, anonymous_listing, resolve_owner
from gateway.state import StateSettings, StateUnavailable
from gateway.state.redis_state import PREFIX, REDIS_ERRORS, SOCKET_TIMEOUT, RedisState, connect

log = logging.getLogger(__name__)

MAX_TASKS_PER_OWNER = 10_000
#: Events kept per task (its stream is trimmed to about this many).
MAX_EVENTS_PER_TASK = 1000
#: How long a tail waits on the stream before it checks that the task's replica lives.
_TAIL_BLOCK_MS = 1000
_RUNNING = f"{PREFIX}a2a:running"
_TERMINAL = "," + ",".join(str(int(s)) for s in TERMINAL_TASK_STATES) + ","

#: Writes a task if the owner matches and the version is the one read (a cancellation,
#: ARGV[8], needs only the task to exist); -1 (a conflict) or -2 (another owner) if not.
#: A task whose stored state is terminal is never written again, whatever the version: see
#: :meth:`RedisTaskStore.save` for why no legitimate write reaches one.
_SAVE = """
local cur = redis.call('HMGET', KEYS[1], 'o', 'v', 's')
local exists = cur[2] ~= false
if exists and cur[1] ~= ARGV[1] then return -2 end
if exists and string.find(ARGV[10], ',' .. tostring(cur[3]) .. ',', 1, true) then return -1 end
local version = tonumber(cur[2]) or 0
if ARGV[8] == '1' then
  if not exists then return -1 end
elseif version ~= tonumber(ARGV[2]) then
  return -1
end
version = version + 1
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'v', version, 't', ARGV[3], 's', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[11])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if ARGV[9] == '1' then redis.call('HDEL', KEYS[3], ARGV[11]) end
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[7])
if extra > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], extra)
  for i = 1, #popped, 2 do
    if popped[i] ~= ARGV[11] then redis.call('DEL', ARGV[12] .. popped[i]) end
  end
end
return version
"""


_UNKNOWN = "its outcome is unknown: send the message again"


def _replica_stopped(replica: str) -> str:
    return f"the server replica running this task ({replica}) stopped before it ended; {_UNKNOWN}"


def _version(value: TaskVersion) -> int:
    raw = value._value  # the SDK leaves the wrapped value to the store that made it
    return raw if isinstance(raw, int) else 0


def _to_stream(event: Event) -> StreamResponse:
    if isinstance(event, Task):
        return StreamResponse(task=event)
    if isinstance(event, Message):
        return StreamResponse(message=event)
    if isinstance(event, TaskStatusUpdateEvent):
        return StreamResponse(status_update=event)
    if isinstance(event, TaskArtifactUpdateEvent):
        return StreamResponse(artifact_update=event)
    raise TypeError(f"not an A2A event: {type(event).__name__}")


def _from_stream(response: StreamResponse) -> Event:
    which = response.WhichOneof("payload")
    if which is None:
        raise ValueError("an empty event")
    event: Event = getattr(response, which)
    return event


class RedisTaskStore(VersionedTaskStore, TaskEventStream):
    """Tasks and their events on Redis; one per process, shared by every network."""

    def __init__(self, state: RedisState, ttl_seconds: float | None = None) -> None:
        self.state = state
        self.redis = state.redis
        self._tail = connect(state.url, socket_timeout=SOCKET_TIMEOUT + _TAIL_BLOCK_MS / 1000)
        self._ttl_ms = int(1000 * (ttl_seconds or StateSettings.from_env().task_ttl_seconds))
        self._save = self.redis.register_script(_SAVE)
        self._reaper: asyncio.Task[None] | None = None
        #: Replica id -> when this replica first found its lease missing (monotonic seconds).
        self._missing_since: dict[str, float] = {}
        #: Task id -> owner: the tasks this replica runs, and those of them whose save failed
        #: because Redis was away (the a2a-sdk ends such a task's run: it is failed, with the
        #: reason, once Redis is back, rather than left ``working`` for good).
        self._mine: dict[str, str] = {}
        self._lost: dict[str, str] = {}
        #: Told of a task this replica failed for a dead one (the push notifications).
        self.push_sender: PushNotificationSender | None = None

    @staticmethod
    def _task_key(task_id: str) -> str:
        return f"{PREFIX}a2a:task:{task_id}"

    @staticmethod
    def _events_key(task_id: str) -> str:
        return f"{PREFIX}a2a:events:{task_id}"

    async def _guard(self, call: Any) -> Any:
        """Redis away (logged once by the state) is StoreUnavailable, which every binding
        answers as a call that found Redis away at its start (:mod:`gateway.a2a.outage`)."""
        return await guarded(self.state, call)

    # ---- VersionedTaskStore ------------------------------------------------------------

    async def save(
        self, task: Task, *, event: Event | None, prev: Task | None, prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Compare-and-swap on ``prev_version`` (a cancellation needs none); an ended task
        (completed, failed, canceled, rejected) is final: any write to it is refused as a
        conflict, even with the version just read.

        Why even then: in the a2a-sdk (1.3, ``agent_execution/active_task.py``) every writer
        of a terminal state first checks the stored task is not terminal (``ActiveTask.cancel``,
        ``EventConsumer._write_failed_status``, the producer refusing an ended task), except
        the consumer. On a conflict it reloads the task and, finding it ended by another
        writer, cancels its producer, but it goes on processing the events the executor had
        already queued (``EventConsumer._process_event``), and those carry the reloaded
        version: accepted, they would turn a task the reaper failed, or another replica
        cancelled, into a completed one (or add the answer to it). Such leftovers are the only
        writes that reach an ended task (``TaskUpdater`` refuses a status after a terminal
        one), so even "the same state, an artifact more" is refused. Refused, each reloads the
        ended task again and stops there (a few events at most: the producer is cancelled).
        """
        del event, prev
        return await self._write(task, resolve_owner(context), _version(prev_version))

    async def _write(self, task: Task, owner: str, prev_version: int) -> TaskVersion:
        state = task.status.state
        args = [
            owner, prev_version, task.SerializeToString(), int(state), self._ttl_ms, time.time(),
            MAX_TASKS_PER_OWNER, "1" if state == TaskState.TASK_STATE_CANCELED else "0",
            "1" if state in TERMINAL_TASK_STATES else "0", _TERMINAL, task.id, f"{PREFIX}a2a:task:",
        ]
        keys = [self._task_key(task.id), f"{PREFIX}a2a:owner:{owner}", _RUNNING]
        try:
            version = int(await self._guard(self._save(keys=keys, args=args)))
        except StoreUnavailable:
            if task.id in self._mine:
                self._lost[task.id] = self._mine.pop(task.id)
            raise
        if state in TERMINAL_TASK_STATES:
            self._mine.pop(task.id, None)
        if version < 0:
            raise ConcurrentTaskModificationError(task.id)
        return TaskVersion(version)

    async def _read(self, task_id: str) -> tuple[str, StoredTask] | None:
        owner, version, raw = await self._guard(self.redis.hmget(self._task_key(task_id), "o", "v", "t"))
        if raw is None:
            return None
        return owner.decode(), StoredTask(Task.FromString(raw), TaskVersion(int(version)))

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        found = await self._read(task_id)
        if found is None or found[0] != resolve_owner(context):
            return None
        stored = found[1]
        if stored.task.status.state in TERMINAL_TASK_STATES:
            self._mine.pop(task_id, None)  # ended by another writer (a cancel, a reaper): not run here now
        else:
            reaped = await self.reap_if_orphaned(task_id)
            if reaped is not None:
                return reaped
        return stored

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        owner = resolve_owner(context)
        ids = await self._guard(self.redis.zrevrange(f"{PREFIX}a2a:owner:{owner}", 0, MAX_TASKS_PER_OWNER - 1))
        anonymous = anonymous_listing(params, context)  # no credentials: only a named context; read
        if anonymous is not None:  # first all the same, so Redis away is answered as for anyone
            return anonymous
        pipe = self.redis.pipeline(transaction=False)
        for task_id in ids:
            pipe.hmget(self._task_key(task_id.decode()), "o", "t")
        rows = await self._guard(pipe.execute()) if ids else []
        # The SDK's own filtering and paging, over this owner's tasks.
        page = InMemoryTaskStore(owner_resolver=lambda _: owner, use_copying=False)
        for stored_owner, raw in rows:
            if raw is not None and stored_owner.decode() == owner:
                await page.save(Task.FromString(raw), context)
        return await page.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        found = await self._read(task_id)
        if found is None or found[0] != resolve_owner(context):
            return
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._task_key(task_id), self._events_key(task_id))
            pipe.zrem(f"{PREFIX}a2a:owner:{found[0]}", task_id)
            pipe.hdel(_RUNNING, task_id)
            await self._guard(pipe.execute())

    # ---- TaskEventStream ---------------------------------------------------------------

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        key = self._events_key(task_id)
        data = {"v": _version(event.version), "e": _to_stream(event.event).SerializeToString()}
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, data, maxlen=MAX_EVENTS_PER_TASK, approximate=True)  # type: ignore[arg-type]
            pipe.pexpire(key, self._ttl_ms)
            await self._guard(pipe.execute())
        cancelled = isinstance(event.event, TaskStatusUpdateEvent | Task) and \
            event.event.status.state == TaskState.TASK_STATE_CANCELED
        if cancelled:  # written here, maybe running elsewhere: stop its chat now
            with contextlib.suppress(StateUnavailable):
                await self.state.cancel_chat("a2a", task_id)

    async def subscribe(  # type: ignore[override]
        self, task_id: str, *, after: TaskVersion
    ) -> AsyncGenerator[VersionedEvent, None]:
        key, last = self._events_key(task_id), "0-0"
        while True:
            try:
                reply = await self._tail.xread({key: last}, count=100, block=_TAIL_BLOCK_MS)
            except REDIS_ERRORS as error:
                self.state.outage(error)
                raise StoreUnavailable() from None
            if not reply:
                await self.reap_if_orphaned(task_id)  # its failure, if any, arrives as the next event
                continue
            for _, entries in reply:
                for entry_id, fields in entries:
                    last = entry_id
                    version = TaskVersion(int(fields[b"v"]))
                    if version.is_after(after):
                        yield VersionedEvent(_from_stream(StreamResponse.FromString(fields[b"e"])), version)

    async def destroy(self, task_id: str) -> None:
        del task_id  # the stream expires with the task

    # ---- running tasks and the replicas that run them ------------------------------------

    async def running(self, task_id: str, owner: str) -> None:
        """Note that this replica runs ``task_id`` (until the task is saved in a final state)."""
        self._mine[task_id] = owner
        await self._guard(self.redis.hset(_RUNNING, task_id, f"{self.state.replica_id}\n{owner}"))

    async def reap_if_orphaned(self, task_id: str) -> StoredTask | None:
        """Fail ``task_id`` if the replica running it lost its lease, or if it ran here and a
        save failed (Redis away); the failed task, or None."""
        if task_id in self._lost:
            return await self._fail_lost(task_id)
        entry = await self._guard(self.redis.hget(_RUNNING, task_id))
        if entry is None:
            return None
        replica, _, owner = entry.decode().partition("\n")
        if replica == self.state.replica_id or not await self._replica_dead(replica):
            return None
        return await self._reap(task_id, owner, _replica_stopped(replica))

    async def _replica_dead(self, replica: str) -> bool:
        """Whether ``replica``'s lease has been missing for a whole lease. Missing at one look
        is not enough: after a Redis restart (no persistence) every lease is gone until its
        replica's next beat, a third of a lease later, and taking the replicas for dead then
        failed their live tasks (their webhooks told FAILED, never COMPLETED)."""
        if await self._guard(self.state.replica_alive(replica)):
            self._missing_since.pop(replica, None)
            return False
        now = time.monotonic()
        return now - self._missing_since.setdefault(replica, now) >= self.state.lease_seconds

    async def _fail_lost(self, task_id: str) -> StoredTask | None:
        reaped = await self._reap(task_id, self._lost[task_id], "the shared task store (Redis) was unreachable "
                                  f"while this task ran; {_UNKNOWN}")
        self._lost.pop(task_id, None)  # failed now (or ended, or moved on elsewhere)
        return reaped

    async def _reap(self, task_id: str, owner: str, reason: str) -> StoredTask | None:
        found = await self._read(task_id)
        if found is None or found[0] != owner:
            await self._guard(self.redis.hdel(_RUNNING, task_id))
            return None
        task, version = found[1].task, found[1].version
        if task.status.state in TERMINAL_TASK_STATES:
            await self._guard(self.redis.hdel(_RUNNING, task_id))
            return found[1]
        failed = Task()
        failed.CopyFrom(task)
        failed.status.CopyFrom(TaskStatus(
            state=TaskState.TASK_STATE_FAILED,
            message=Message(role=Role.ROLE_AGENT, message_id=f"{task_id}-replica-lost", task_id=task_id,
                            context_id=task.context_id, parts=[Part(text=f"Error: {reason}")]),
        ))
        failed.status.timestamp.GetCurrentTime()
        try:
            new_version = await self._write(failed, owner, _version(version))
        except ConcurrentTaskModificationError:
            return None  # another replica reaped it first, or the task moved on
        log.warning("A2A task %s failed: %s", task_id, reason)
        event = TaskStatusUpdateEvent(task_id=task_id, context_id=task.context_id, status=failed.status)
        await self.publish(task_id, VersionedEvent(event, new_version))
        if self.push_sender is not None:  # the dead replica cannot say it: this one does
            await self.push_sender.send_notification(task_id, event)
        return StoredTask(failed, new_version)

    async def _reap_loop(self) -> None:
        """Every half lease, fail the tasks of replicas whose lease expired, and this replica's
        tasks whose save failed while Redis was away."""
        while True:
            await asyncio.sleep(self.state.lease_seconds / 2)
            try:
                entries = await self._guard(self.redis.hgetall(_RUNNING))
                dead: dict[str, bool] = {self.state.replica_id: False}
                for raw_id, raw_entry in entries.items():
                    replica, _, owner = raw_entry.decode().partition("\n")
                    if replica not in dead:
                        dead[replica] = await self._replica_dead(replica)
                    if dead[replica]:
                        await self._reap(raw_id.decode(), owner, _replica_stopped(replica))
                for task_id in list(self._lost):
                    await self._fail_lost(task_id)
                for gone in set(self._missing_since) - set(dead):  # no task of theirs is left to reap
                    del self._missing_since[gone]
            except StoreUnavailable:
                continue  # Redis is away: logged; look again later
            except REDIS_ERRORS as error:  # a pipeline error the guard did not see
                self.state.outage(error)
            except Exception:  # an entry it cannot read must not stop the reaping for good
                log.exception("reaping the tasks of stopped replicas failed; trying again later")

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_loop())

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        with contextlib.suppress(*REDIS_ERRORS):
            await self._tail.aclose()


def owner_context(owner: str) -> ServerCallContext:
    """A call context for ``owner`` (what the front-end sets for each request)."""
    return ServerCallContext(state={OWNER_KEY: owner})
