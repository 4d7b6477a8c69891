"""Where A2A tasks live: in this replica's memory, bounded, scoped to key and network.

Tasks are kept only so ``tasks/get``, ``tasks/cancel`` and resubscribe can find a task
this replica runs or ran; the conversation itself does not depend on them (see
:mod:`gateway.state.conversations`). The owner of a task is a digest of the caller's
credentials plus the network's name (the front-end sets it), so one API key cannot read
another's tasks, and a task is found only on its own network's endpoint.

A caller with no credentials (access control off) has no identity to scope by: every such
caller shares one scope, so ``ListTasks`` would show each one everybody's tasks. Without
credentials ``ListTasks`` therefore lists only the tasks of the ``contextId`` it names
(contextIds are unguessable, the caller's own conversation), and nothing when it names none
(:func:`anonymous_listing`); A2A lets a server list only the tasks visible to a caller.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE

#: ServerCallContext.state key holding the owner scope of the call.
OWNER_KEY = "neuro_san.owner"
DEFAULT_MAX_TASKS = 10_000


def owner_of(headers: Mapping[str, str]) -> str:
    """A stable, non-reversible owner scope for the credentials in these headers."""
    secret = headers.get("authorization") or headers.get("x-api-key") or ""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:32] if secret else ""


def resolve_owner(context: ServerCallContext) -> str:
    return str(context.state.get(OWNER_KEY, ""))


def anonymous_listing(params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse | None:
    """The answer to a ``ListTasks`` without credentials and without a ``contextId`` filter
    (an empty page); None when the store lists as usual. The owner scope of a caller without
    credentials is ``:<network>`` (``call_state`` in :mod:`gateway.a2a.executor`)."""
    if params.context_id or not resolve_owner(context).startswith(":"):
        return None
    return ListTasksResponse(tasks=[], total_size=0, page_size=params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE)


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

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        anonymous = anonymous_listing(params, context)  # no credentials: only a named context
        return anonymous if anonymous is not None else await super().list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._order.pop((resolve_owner(context), task_id), None)
        await super().delete(task_id, context)
