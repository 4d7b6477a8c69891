"""Where A2A tasks live: in this replica's memory, bounded, scoped to key and network.

Tasks are kept only so ``tasks/get``, ``tasks/cancel`` and resubscribe can find a task
this replica runs or ran; the conversation itself does not depend on them (see
:mod:`gateway.a2a.conversations`). The owner of a task is a digest of the caller's
credentials plus the network's name (the front-end sets it), so one API key cannot read
another's tasks, and a task is found only on its own network's endpoint.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Task

#: ServerCallContext.state key holding the owner scope of the call.
OWNER_KEY = "neuro_san.owner"
DEFAULT_MAX_TASKS = 10_000


def owner_of(headers: Mapping[str, str]) -> str:
    """A stable, non-reversible owner scope for the credentials in these headers."""
    secret = headers.get("authorization") or headers.get("x-api-key") or ""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:32] if secret else ""


def resolve_owner(context: ServerCallContext) -> str:
    return str(context.state.get(OWNER_KEY, ""))


class BoundedTaskStore(InMemoryTaskStore):
    """The SDK's in-memory store, forgetting the oldest tasks beyond ``max_tasks``."""

    def __init__(self, max_tasks: int = DEFAULT_MAX_TASKS) -> None:
        super().__init__(owner_resolver=resolve_owner)
        self._max = max_tasks
        self._order: OrderedDict[tuple[str, str], None] = OrderedDict()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Saves ``task``; an ended task (completed, failed, canceled, rejected) is final: a
        write to it is refused as a conflict, which the SDK answers by reloading the ended
        task and stopping (a cancel racing the chat's own end must not flip one into the
        other; see :meth:`gateway.a2a.redis_tasks.RedisTaskStore.save`)."""
        stored = await super().get(task.id, context)
        if stored is not None and stored.status.state in TERMINAL_TASK_STATES:
            raise ConcurrentTaskModificationError(task.id)
        await super().save(task, context)
        self._order[(resolve_owner(context), task.id)] = None
        while len(self._order) > self._max:
            (owner, task_id), _ = self._order.popitem(last=False)
            await super().delete(task_id, ServerCallContext(state={OWNER_KEY: owner}))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._order.pop((resolve_owner(context), task_id), None)
        await super().delete(task_id, context)
