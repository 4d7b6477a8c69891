"""An A2A task runs one neuro-san chat turn through the agents facade (over the invoker seam).

The SDK's request handler owns the task lifecycle (store, events, cancel, resubscribe);
this executor turns one A2A message into one chat (:mod:`gateway.agents`) with the agent named by
the route, with the caller's headers as gRPC metadata so authentication, limits and
request ids apply, and turns the chat's answer into the task's artifact.

What the client may send, besides the text parts, under ``message.metadata["neuro_san"]``:
``chat_context`` (as returned by the previous answer), ``sly_data`` (an object), and
``thinking: true`` (stream the network's intermediate messages as ``working`` status
messages). JSON-object data parts of the message are merged into sly_data as well.
The answer's artifact and final status message carry ``metadata["neuro_san"]`` with the
``chat_context`` to continue from and the ``sly_data`` the network returned.

On ``message/stream`` (``SendStreamingMessage``) the chat asks for token deltas
(``stream_tokens``): the front man's answer text streams as chunks of the ``answer``
artifact (``append: true`` after the first, ``lastChunk: false``), and the complete
answer then replaces them in one last chunk (``append: false``, ``lastChunk: true``),
the same artifact as without streaming. Reasoning and sub-agents' deltas are not sent.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Task, TaskState, TaskStatus
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format, struct_pb2

from gateway.a2a.outage import OUTAGE_KEY, STATE_UNAVAILABLE, StoreUnavailable
from gateway.a2a.tasks import OWNER_KEY
from gateway.agents.interface import (
    Agents,
    Answer,
    AnswerDelta,
    Caller,
    ChatFailed,
    ChatStream,
    InvalidTurn,
    Step,
    Turn,
)
from gateway.host.errors import RpcFailure
from gateway.state import SharedState, StateUnavailable
from gateway.state.conversations import ConversationStore
from gateway.state.memory import MemoryState

if TYPE_CHECKING:
    from gateway.a2a.redis_tasks import RedisTaskStore  # imports redis: only with AGENT_REDIS_URL

log = logging.getLogger(__name__)

#: The metadata key of everything neuro-san specific in A2A messages and artifacts.
METADATA_KEY = "neuro_san"
#: ServerCallContext.state keys set by the front-end for each call.
AGENT_KEY = "neuro_san.agent"
GRPC_METADATA_KEY = "neuro_san.metadata"
#: A list in the call state where a chat refused by the service (caller limits, busy
#: server) is put, so that the front-end can answer an unsent response with the refusal's
#: HTTP status and Retry-After instead of a failed task.
REFUSALS_KEY = "neuro_san.refusals"
#: True in the call state for the streaming method: the answer streams as artifact chunks.
STREAMING_KEY = "neuro_san.streaming"

def _options(message: Message) -> dict[str, Any]:
    metadata = json_format.MessageToDict(message.metadata) if message.HasField("metadata") else {}
    options = metadata.get(METADATA_KEY, {})
    if not isinstance(options, dict):
        raise InvalidParamsError(message=f"message.metadata.{METADATA_KEY} must be an object")
    return options


def _sly_data(message: Message, options: Mapping[str, Any]) -> dict[str, Any]:
    sly: dict[str, Any] = {}
    for value in get_data_parts(list(message.parts)):
        if isinstance(value, dict):
            sly.update(value)
    extra = options.get("sly_data", {})
    if not isinstance(extra, dict):
        raise InvalidParamsError(message=f"metadata.{METADATA_KEY}.sly_data must be an object")
    sly.update(extra)
    return sly


def _chat_context(raw: Any) -> dict[str, Any] | None:
    if raw is not None and not isinstance(raw, dict):
        raise InvalidParamsError(message=f"metadata.{METADATA_KEY}.chat_context must be an object")
    return raw


def _conversation_key(context: RequestContext) -> str:
    """contextIds are remembered per caller credentials and network: another key holder
    who learns a contextId cannot continue that conversation."""
    state = context.call_context.state
    return f"{state.get(OWNER_KEY, '')}:{context.context_id}"  # the owner scope names the network too


def call_state(
    agent: str, metadata: list[tuple[str, Any]], owner: str, refusals: list[RpcFailure], streaming: bool
) -> dict[str, Any]:
    """What the executor and the stores read of one call, the same for every binding: the
    network, the caller's metadata, the owner scope (``owner_of`` the credentials); and where
    the request handler notes a Redis outage met on the way (:mod:`gateway.a2a.outage`)."""
    return {
        REFUSALS_KEY: refusals,
        OUTAGE_KEY: [],
        AGENT_KEY: agent,
        GRPC_METADATA_KEY: metadata,
        OWNER_KEY: f"{owner}:{agent}",  # tasks are per key and per network
        STREAMING_KEY: streaming,
    }



class NetworkExecutor(AgentExecutor):
    """Runs A2A tasks as neuro-san chats; shared by every agent of the front-end.

    Each running chat is registered in the shared state's index of chats, so that a
    ``tasks/cancel`` written on another replica stops it here (its gRPC call, so its LLM
    calls); with Redis, the task is also listed as run by this replica, so that it ends
    ``failed`` if this replica dies (:mod:`gateway.a2a.redis_tasks`).
    """

    def __init__(
        self,
        agents: Agents,
        conversations: ConversationStore,
        state: SharedState | None = None,
        tasks: RedisTaskStore | None = None,
    ) -> None:
        self._agents = agents
        self._conversations = conversations
        self._state = state or MemoryState()
        self._tasks = tasks

    async def _chat(self, context: RequestContext, tokens: bool) -> tuple[ChatStream, bool]:
        """The turn's chat (not started) and whether its steps are asked for; bad input raises."""
        message = context.message
        if message is None:
            raise InvalidParamsError(message="a message is required")
        options = _options(message)
        text = "\n".join(get_text_parts(list(message.parts)))
        sly = _sly_data(message, options)
        raw_context = options.get("chat_context")
        if raw_context is None and context.context_id:
            try:
                raw_context = await self._conversations.get(_conversation_key(context))
            except StateUnavailable:
                raise StoreUnavailable(f"{STATE_UNAVAILABLE}, or send the chat_context from the last answer "
                                       f"in metadata.{METADATA_KEY} to continue without it") from None
        thinking = options.get("thinking") is True
        turn = Turn.of_text(text, chat_context=_chat_context(raw_context), sly_data=sly or None,
                            steps=thinking, stream_tokens=tokens, strict_context=True)
        state = context.call_context.state
        try:
            # A private network is not there over A2A unless the caller's key names it (Caller's default).
            return self._agents.chat(state[AGENT_KEY], turn, Caller(state.get(GRPC_METADATA_KEY, []))), thinking
        except InvalidTurn as error:  # only chat_context can be wrong: the rest is built here
            where = f"{METADATA_KEY}.{error.field}" if error.field else METADATA_KEY
            raise InvalidParamsError(message=f"metadata.{where}: {error}") from None

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        state = context.call_context.state
        tokens = state.get(STREAMING_KEY) is True
        stream, thinking = await self._chat(context, tokens)  # bad input raises before a task exists
        task_id, context_id = str(context.task_id), str(context.context_id)
        if self._tasks is not None:  # before the task is first saved: a reaper must know who runs it
            await self._tasks.running(task_id, str(state.get(OWNER_KEY, "")))
        if context.current_task is None:
            await event_queue.enqueue_event(Task(
                id=task_id, context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message] if context.message else [],
            ))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        artifact_id = str(uuid.uuid4())  # the answer's artifact: streamed chunks, then the whole answer
        chat = asyncio.ensure_future(self._converse(stream, thinking, updater, state, task_id, artifact_id))
        unregister = self._state.register_chat("a2a", task_id, chat.cancel)
        try:
            answer = await chat
        except asyncio.CancelledError:
            if not chat.cancelled() or _being_cancelled():
                raise  # this replica cancels the task: the SDK writes CANCELED
            # Cancelled on another replica (already written there): say so here too; the
            # store's version check makes this replica take the written state.
            log.info("A2A task %s cancelled from another replica", task_id)
            await updater.cancel()
            return
        finally:
            unregister()
        if answer is not None:
            await self._finish(updater, _conversation_key(context), answer, artifact_id)

    async def _converse(
        self, stream: ChatStream, thinking: bool, updater: TaskUpdater, state: Mapping[str, Any], task_id: str,
        artifact_id: str,
    ) -> Answer | None:
        """The chat; its answer, or None once the task has failed."""
        answer: Answer | None = None
        chunks = 0
        async with stream:  # a cancelled task (tasks/cancel, another replica) cancels the chat
            async for event in stream:
                if isinstance(event, AnswerDelta):
                    await updater.add_artifact([Part(text=event.text)], artifact_id=artifact_id, name="answer",
                                               append=chunks > 0, last_chunk=False)
                    chunks += 1
                elif isinstance(event, Answer):
                    answer = event
                elif isinstance(event, Step):
                    if thinking and event.text:
                        await updater.update_status(TaskState.TASK_STATE_WORKING, updater.new_agent_message(
                            [Part(text=event.text)],
                            metadata={METADATA_KEY: {"type": event.kind, "origin": "/".join(event.origin)}},
                        ))
                elif isinstance(event, ChatFailed):
                    await self._failed(updater, state, task_id, event)
                    return None
        if answer is None:
            await updater.failed(updater.new_agent_message([Part(text="Error: the network gave no answer")]))
        return answer

    @staticmethod
    async def _failed(updater: TaskUpdater, state: Mapping[str, Any], task_id: str, failed: ChatFailed) -> None:
        reason = f"{failed.code.name}: {failed.message}"
        log.info("A2A task %s failed: %s", task_id, reason)
        extra: dict[str, Any] | None = None
        if failed.is_refusal:  # which limit, when to retry: also in the failed task's message
            extra = {METADATA_KEY: failed.failure.jsonrpc_data()}
            state.get(REFUSALS_KEY, []).append(failed.failure)
        await updater.failed(updater.new_agent_message([Part(text=f"Error: {reason}")], metadata=extra))

    async def _finish(self, updater: TaskUpdater, conversation: str, answer: Answer, artifact_id: str) -> None:
        extra: dict[str, Any] = {}
        if answer.chat_context is not None:
            chat_context = dict(answer.chat_context)
            extra["chat_context"] = chat_context
            try:
                await self._conversations.put(conversation, chat_context)
            except StateUnavailable:
                pass  # logged by the state; the answer carries chat_context for the client to send back
        if answer.sly_data:
            extra["sly_data"] = dict(answer.sly_data)
        metadata = {METADATA_KEY: extra}
        parts = [Part(text=answer.text)]
        if answer.structure is not None:
            structure = struct_pb2.Value()
            structure.struct_value.update(answer.structure)
            parts.append(Part(data=structure, media_type="application/json"))
        # The whole answer, replacing any streamed chunks (append false, same id).
        await updater.add_artifact(
            parts, artifact_id=artifact_id, name="answer", metadata=metadata, append=False, last_chunk=True
        )
        await updater.complete(updater.new_agent_message([Part(text=answer.text)], metadata=metadata))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The handler has already cancelled execute(): that cancels the chat's call,
        # which cancels the chat and its LLM calls, as a client disconnect does.
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.cancel()


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
