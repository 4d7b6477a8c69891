"""A2A push notifications: where the webhooks are kept, which URLs may receive them, and
their delivery with retries.

- Configurations (``tasks/pushNotificationConfig/set|get|list|delete``) are kept beside
  the tasks: in Redis with ``AGENT_REDIS_URL`` (a configuration set on one replica is used
  by the replica running the task), else in memory. They are scoped to the caller (API
  key and network) as tasks are, and expire with them.
- URLs: http(s) only, and every address the host name resolves to must be public:
  loopback, link-local (169.254.169.254…), private, shared, multicast, reserved and
  unspecified addresses are refused when the configuration is set *and* again before each
  delivery (after DNS resolution, so a name pointing inside is refused too), unless
  ``AGENT_A2A_PUSH_ALLOWED_NETWORKS`` (comma-separated CIDRs) lets a range in. Redirects
  are not followed. Each delivery connects to the address its check resolved (the URL's
  host replaced by it, the name kept in ``Host`` and as the TLS server name): one lookup.
- Delivery: the task's events are posted in order, each as the A2A ``StreamResponse``
  JSON, with the configuration's ``token`` in ``X-A2A-Notification-Token`` and its
  ``authentication`` (scheme and credentials) in ``Authorization``, as the spec describes;
  without credentials, and with a signing key, a signed JWT instead (:mod:`push_signing`).
  A 5xx, 408, 429 or a connection failure is retried with exponential backoff
  (:data:`ATTEMPTS` attempts); any other 4xx is final. Each retry re-reads its
  configuration, so deleting one stops its deliveries, retries included; configurations
  that cannot be read (Redis away) count as a failed attempt, retried the same way. An
  event that cannot be sent is given up alone: the task's next events (its final state)
  are still sent. Delivery runs beside the task, never delaying it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import httpx
from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore, PushNotificationEvent, PushNotificationSender
from a2a.server.tasks.push_notification_config_store import normalize_push_notification_config
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict

from gateway.a2a.outage import guarded
from gateway.a2a.tasks import resolve_owner
from gateway.state import StateUnavailable

if TYPE_CHECKING:
    from gateway.state.redis_state import RedisState  # imports redis: only with AGENT_REDIS_URL
from gateway.a2a.push_policy import PushUrlPolicy, Resolved
from gateway.a2a.push_signing import PushSigner

log = logging.getLogger(__name__)

TOKEN_HEADER = "X-A2A-Notification-Token"
ATTEMPTS = 5
FIRST_BACKOFF_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 8.0
#: Events waiting for delivery per task; beyond it the oldest waiting one is dropped.
MAX_QUEUED_PER_TASK = 256
_RETRIED = frozenset({408, 429})


def _backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1, 2, …)."""
    return min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** (attempt - 1))

async def check_url(policy: PushUrlPolicy, url: str) -> bool:
    """The SDK's validator: raises InvalidParamsError saying why a URL is refused."""
    reason = await policy.why_refused(url)
    if reason is not None:
        raise InvalidParamsError(message=f"push notification URL refused: {reason}")
    return True


def pinned_url(resolved: Resolved) -> tuple[str, str]:
    """``resolved.url`` with its host replaced by the checked address, and the ``Host`` header
    (the name and any port written in the URL) the request carries instead."""
    parts = urlsplit(resolved.url)
    credentials, at, netloc = parts.netloc.rpartition("@")  # credentials stay in the URL (Basic)
    address = f"[{resolved.address}]" if ":" in resolved.address else resolved.address
    pinned = credentials + at + (address if parts.port is None else f"{address}:{parts.port}")
    return urlunsplit((parts.scheme, pinned, parts.path or "/", parts.query, "")), netloc


class RedisPushConfigStore(PushNotificationConfigStore):
    """Configurations in one Redis hash per task (field ``<owner>\\n<config id>``)."""

    def __init__(self, state: RedisState, ttl_seconds: float) -> None:
        self._state = state
        self._ttl_ms = int(ttl_seconds * 1000)

    @staticmethod
    def _key(task_id: str) -> str:
        return f"neuro-san:a2a:push:{task_id}"

    async def set_info(self, task_id: str, notification_config: TaskPushNotificationConfig,
                       context: ServerCallContext) -> TaskPushNotificationConfig:
        stored = normalize_push_notification_config(task_id, notification_config)
        field = f"{resolve_owner(context)}\n{stored.id}"
        async with self._state.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._key(task_id), field, stored.SerializeToString())
            pipe.pexpire(self._key(task_id), self._ttl_ms)
            await guarded(self._state, pipe.execute())
        return stored

    async def _all(self, task_id: str) -> dict[str, TaskPushNotificationConfig]:
        raw = await guarded(self._state, self._state.redis.hgetall(self._key(task_id)))
        return {field.decode(): TaskPushNotificationConfig.FromString(value) for field, value in raw.items()}

    async def get_info(self, task_id: str, context: ServerCallContext) -> list[TaskPushNotificationConfig]:
        prefix = resolve_owner(context) + "\n"
        return [config for field, config in (await self._all(task_id)).items() if field.startswith(prefix)]

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return list((await self._all(task_id)).values())

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        prefix = resolve_owner(context) + "\n"
        fields = [f for f in await self._all(task_id) if f.startswith(prefix) and
                  (config_id is None or f == prefix + config_id)]
        if fields:
            await guarded(self._state, self._state.redis.hdel(self._key(task_id), *fields))


class RetryingPushSender(PushNotificationSender):
    """Posts each task's events to its webhooks in order, in the background, with retries."""

    def __init__(self, store: PushNotificationConfigStore, policy: PushUrlPolicy,
                 client: httpx.AsyncClient | None = None, signer: PushSigner | None = None) -> None:
        self._store = store
        self._policy = policy
        self._signer = signer
        self._client = client or httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        self._queues: dict[str, asyncio.Queue[PushNotificationEvent]] = {}
        self._workers: set[asyncio.Task[None]] = set()

    async def send_notification(self, task_id: str, event: PushNotificationEvent) -> None:
        queue = self._queues.get(task_id)
        if queue is None:
            queue = self._queues[task_id] = asyncio.Queue(MAX_QUEUED_PER_TASK)
            worker = asyncio.ensure_future(self._deliver_all(task_id, queue))
            self._workers.add(worker)
            worker.add_done_callback(self._workers.discard)
        if queue.full():
            queue.get_nowait()
            log.warning("push notifications for task %s fall behind: an older event was dropped", task_id)
        queue.put_nowait(event)

    async def _deliver_all(self, task_id: str, queue: asyncio.Queue[PushNotificationEvent]) -> None:
        try:
            while not queue.empty():
                event = queue.get_nowait()
                try:
                    await self._deliver_event(task_id, event)
                except Exception:  # best effort, as the SDK asks: never disturb the task,
                    # and never drop the events queued behind this one (the final state among them)
                    log.exception("a push notification for task %s was not sent", task_id)
        finally:
            if self._queues.get(task_id) is queue:
                del self._queues[task_id]

    async def _deliver_event(self, task_id: str, event: PushNotificationEvent) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                configs = await self._store.get_info_for_dispatch(task_id)
                break
            except StateUnavailable as error:  # Redis away: a failed attempt, as a 5xx is
                if attempt == ATTEMPTS:
                    log.warning("push notification for task %s given up: %s", task_id, error)
                    return
                await asyncio.sleep(_backoff(attempt))
        if not configs:  # most tasks have no webhook: their events are not converted for nothing
            return
        body = json.dumps(MessageToDict(to_stream_response(event))).encode()
        outcomes = await asyncio.gather(*(self._deliver(task_id, config, body) for config in configs),
                                        return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                log.error("push notification for task %s failed", task_id, exc_info=outcome)

    async def _current(self, task_id: str, config_id: str) -> TaskPushNotificationConfig | None:
        for config in await self._store.get_info_for_dispatch(task_id):
            if config.id == config_id:
                return config
        return None

    async def _deliver(self, task_id: str, first: TaskPushNotificationConfig, body: bytes) -> None:
        """``body`` to one configuration: the first attempt as just read with the others (no
        second read), each retry as the configuration is by then (deleted: no more attempts)."""
        config: TaskPushNotificationConfig | None = first
        where, problem = first.url, ""
        for attempt in range(1, ATTEMPTS + 1):
            if config is not None:  # None: its read failed (Redis away), a failed attempt
                where = config.url
                problem = await self._post(task_id, config, body) or ""
                if not problem:
                    return
            if attempt == ATTEMPTS:
                log.warning("push notification for task %s to %s given up after %d attempts (%s)", task_id,
                            where, ATTEMPTS, problem)
                return
            log.info("push notification for task %s to %s failed (%s); retry in %.2f s", task_id,
                     where, problem, _backoff(attempt))
            await asyncio.sleep(_backoff(attempt))
            try:
                config = await self._current(task_id, first.id)
            except StateUnavailable as error:  # Redis away: a failed attempt, retried as a 5xx is
                config, problem = None, str(error)
                continue
            if config is None:  # deleted: stop, retries included
                return

    async def _post(self, task_id: str, config: TaskPushNotificationConfig, body: bytes) -> str | None:
        """One attempt: None when it is over (delivered, or refused for good), else why to retry."""
        resolved = await self._policy.resolve(config.url)  # resolved again: DNS may have moved
        if isinstance(resolved, str):
            log.warning("push notification for task %s not sent: %s", task_id, resolved)
            return None
        # Connect to the address just checked, never resolving the name a second time (a name
        # that rebinds between the check and the connect cannot reach inside): the URL names
        # the address, Host and the TLS server name (SNI, certificate check) the name.
        url, host_header = pinned_url(resolved)
        headers = {"Content-Type": "application/json", "Host": host_header}
        if config.token:
            headers[TOKEN_HEADER] = config.token
        if config.HasField("authentication") and config.authentication.credentials:
            headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
        elif self._signer is not None:  # signed for this URL and this exact body
            headers["Authorization"] = f"Bearer {self._signer.token(config.url, body, task_id)}"
        try:
            response = await self._client.post(url, content=body, headers=headers,
                                               extensions={"sni_hostname": resolved.host})
        except httpx.HTTPError as error:
            return f"{type(error).__name__}: {error}"
        if response.status_code < 300:
            return None
        if response.status_code < 500 and response.status_code not in _RETRIED:
            log.warning("push notification for task %s refused by %s: HTTP %d", task_id, config.url,
                        response.status_code)
            return None
        return f"HTTP {response.status_code}"

    async def close(self) -> None:
        for worker in list(self._workers):
            worker.cancel()
        for worker in list(self._workers):
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        await self._client.aclose()
