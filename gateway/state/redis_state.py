"""The shared state on Redis (``AGENT_REDIS_URL``): every replica sees the same.

- Documents (A2A contextId → chat_context): ``SET … EX`` plus a per-namespace sorted set
  of keys by write time, trimmed in the same Lua script, so a namespace holds at most
  ``max_entries`` (the oldest written go first) and every entry expires.
- Cancellation: the index of running chats is each replica's own (the callbacks that stop
  them live in its memory); a cancellation that finds nothing here is published on one
  pub/sub channel, and the replica running the chat stops it. Pub/sub delivers at most
  once: a cancellation published while a replica is cut off from Redis is lost for it
  (A2A tasks still end cancelled: the task store's version check stops them on their next
  update).
- Leases: each replica refreshes ``replica:<id>`` every third of the lease; a replica
  whose key expired is dead (the A2A task store fails its tasks).

Every call has short socket timeouts and no retries, so nothing waits on a Redis that is
gone: the call raises :class:`~gateway.state.StateUnavailable`, one WARNING says so, and
the first call that works again logs that Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway.state.interface import CancelCallback, ChatKind, SharedState, StateUnavailable
from gateway.state.memory import DEFAULT_MAX_ENTRIES, LocalChats

log = logging.getLogger(__name__)

T = TypeVar("T")

PREFIX = "neuro-san:"
CANCEL_CHANNEL = PREFIX + "cancel"
#: Seconds a command (or a connection attempt) may take before Redis counts as unreachable.
SOCKET_TIMEOUT = 1.0
#: Between attempts to re-subscribe to the cancellation channel after an outage.
_RESUBSCRIBE_SECONDS = 0.5

_PUT = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], extra)
  for i = 1, #popped, 2 do
    if popped[i] ~= KEYS[1] and string.sub(popped[i], 1, #ARGV[5]) == ARGV[5] then redis.call('DEL', popped[i]) end
  end
end
return 1
"""


def connect(url: str, socket_timeout: float | None = SOCKET_TIMEOUT) -> Any:
    """A client that fails fast: short timeouts, and one immediate retry on a broken
    connection only (a pooled connection that a restarted Redis closed), never on a timeout."""
    return aioredis.from_url(
        url, socket_timeout=socket_timeout, socket_connect_timeout=SOCKET_TIMEOUT,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)), retry_on_timeout=False,
    )


REDIS_ERRORS: tuple[type[BaseException], ...] = (aioredis.RedisError, OSError, asyncio.TimeoutError)


async def ping(url: str) -> str | None:
    """Why Redis at ``url`` does not answer a PING (within the client's short timeouts), or None."""
    client = connect(url)
    try:
        await client.ping()
    except REDIS_ERRORS as error:
        return str(error) or type(error).__name__
    finally:
        with contextlib.suppress(*REDIS_ERRORS):
            await client.aclose()
    return None


class RedisState(SharedState):
    shared = True

    def __init__(self, url: str, lease_seconds: float, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.url = url
        self.redis: Any = connect(url)
        self.lease_seconds = lease_seconds
        self.replica_id = secrets.token_hex(8)
        self._max = max_entries
        self._put = self.redis.register_script(_PUT)
        self.chats = LocalChats()
        self._degraded = False
        self._background: list[asyncio.Task[None]] = []

    # ---- outage bookkeeping ------------------------------------------------------------

    def outage(self, error: BaseException) -> StateUnavailable:
        if not self._degraded:
            log.warning("Redis for the shared front-end state is unreachable (%s): A2A tasks, contextIds and "
                        "cancellations across replicas fail until it is back", error or type(error).__name__)
        self._degraded = True
        return StateUnavailable(f"the shared state (Redis) is unreachable: {error or type(error).__name__}")

    def recovered(self) -> None:
        if self._degraded:
            log.warning("Redis for the shared front-end state is back")
        self._degraded = False

    async def guard(self, call: Awaitable[T]) -> T:
        """Await a Redis call; its failure becomes StateUnavailable (and one WARNING)."""
        try:
            result = await call
        except REDIS_ERRORS as error:
            raise self.outage(error) from None
        self.recovered()
        return result

    async def available(self) -> bool:
        if not self._degraded:
            return True
        try:
            await self.guard(self.redis.ping())
        except StateUnavailable:
            return False
        return True

    # ---- documents ---------------------------------------------------------------------

    def _key(self, namespace: str, key: str) -> str:
        return f"{PREFIX}{namespace}:{key}"

    async def get_json(self, namespace: str, key: str) -> dict[str, Any] | None:
        raw = await self.guard(self.redis.get(self._key(namespace, key)))
        if raw is None:
            return None
        value = json.loads(raw)
        return value if isinstance(value, dict) else None

    async def put_json(self, namespace: str, key: str, value: dict[str, Any], ttl_seconds: float) -> None:
        if not key or self._max <= 0:
            return
        keys = [self._key(namespace, key), f"{PREFIX}{namespace}-index"]
        args = [json.dumps(value), max(1, int(ttl_seconds * 1000)), time.time(), self._max, f"{PREFIX}{namespace}:"]
        await self.guard(self._put(keys=keys, args=args))

    # ---- chats and cancellation --------------------------------------------------------

    def register_chat(self, kind: ChatKind, key: str, cancel: CancelCallback) -> Callable[[], None]:
        self.start()
        return self.chats.register(kind, key, cancel)

    async def cancel_chat(self, kind: ChatKind, key: str) -> bool:
        if self.chats.cancel(kind, key):
            return True
        message = json.dumps({"kind": kind, "key": key, "from": self.replica_id})
        await self.guard(self.redis.publish(CANCEL_CHANNEL, message))
        return False

    def _cancelled_elsewhere(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
            kind, key = str(message["kind"]), str(message["key"])
        except (ValueError, KeyError, TypeError):
            return  # not ours
        if self.chats.cancel(kind, key):
            log.info("%s chat %s cancelled by replica %s", kind, key[:16], message.get("from", "?"))

    async def _listen(self) -> None:
        """Follow the cancellation channel; re-subscribe after an outage."""
        while True:
            listener = connect(self.url, socket_timeout=None)
            pubsub = listener.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CANCEL_CHANNEL)
                self.recovered()
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        self._cancelled_elsewhere(message["data"])
            except REDIS_ERRORS as error:
                self.outage(error)
            finally:
                with contextlib.suppress(*REDIS_ERRORS):
                    await pubsub.aclose()
                with contextlib.suppress(*REDIS_ERRORS):
                    await listener.aclose()
            await asyncio.sleep(_RESUBSCRIBE_SECONDS)

    # ---- leases ------------------------------------------------------------------------

    def _lease_key(self, replica_id: str) -> str:
        return f"{PREFIX}replica:{replica_id}"

    async def _heartbeat(self) -> None:
        every = self.lease_seconds / 3
        while True:
            try:
                await self.guard(self.redis.set(self._lease_key(self.replica_id), "1",
                                                px=math.ceil(self.lease_seconds * 1000)))
            except StateUnavailable:
                pass  # logged; the next beat tries again
            await asyncio.sleep(every)

    async def replica_alive(self, replica_id: str) -> bool:
        return bool(await self.guard(self.redis.exists(self._lease_key(replica_id))))

    # ---- life --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the cancellation listener and the heartbeat (once, inside the event loop)."""
        if self._background:
            return
        loop = asyncio.get_running_loop()
        self._background = [loop.create_task(self._listen()), loop.create_task(self._heartbeat())]

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        for task in self._background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._background = []
        with contextlib.suppress(*REDIS_ERRORS):
            await self.redis.delete(self._lease_key(self.replica_id))  # a clean stop frees its lease now
        with contextlib.suppress(*REDIS_ERRORS):
            await self.redis.aclose()
