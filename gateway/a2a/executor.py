"""An A2A task runs one neuro-san chat turn through the invoker seam.

The SDK's request handler owns the task lifecycle (store, events, cancel, resubscribe);
this executor turns one A2A message into a ``StreamingChat`` call on the agent named by
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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import grpc
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Task, TaskState, TaskStatus
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format, struct_pb2
from neuro_san.api.grpc import agent_pb2, chat_pb2

from gateway.a2a.conversations import ConversationStore
from gateway.a2a.outage import OUTAGE_KEY, STATE_UNAVAILABLE, StoreUnavailable
from gateway.a2a.tasks import OWNER_KEY
from gateway.host.errors import RpcFailure, rpc_failure
from gateway.state import SharedState, StateUnavailable
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

_THINKING_TYPES = frozenset({chat_pb2.ChatMessage.AI, chat_pb2.ChatMessage.AGENT,
                             chat_pb2.ChatMessage.AGENT_TOOL_RESULT, chat_pb2.ChatMessage.AGENT_PROGRESS})


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


def _chat_context(raw: Any) -> chat_pb2.ChatContext | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InvalidParamsError(message=f"metadata.{METADATA_KEY}.chat_context must be an object")
    try:
        return json_format.ParseDict(raw, chat_pb2.ChatContext())
    except json_format.ParseError as error:
        raise InvalidParamsError(message=f"metadata.{METADATA_KEY}.chat_context: {error}") from None


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
        streaming_chat: Callable[..., Any],
        conversations: ConversationStore,
        timeout: float | None,
        state: SharedState | None = None,
        tasks: RedisTaskStore | None = None,
    ) -> None:
        self._chat = streaming_chat
        self._conversations = conversations
        self._timeout = timeout
        self._state = state or MemoryState()
        self._tasks = tasks

    async def _request(self, context: RequestContext, tokens: bool) -> tuple[agent_pb2.ChatRequest, bool]:
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
        request = agent_pb2.ChatRequest(
            user_message=chat_pb2.ChatMessage(type=chat_pb2.ChatMessage.HUMAN, text=text),
            chat_filter=agent_pb2.ChatFilter(
                chat_filter_type=agent_pb2.MAXIMAL if thinking else agent_pb2.MINIMAL
            ),
        )
        if tokens:
            request.stream_tokens = True
        chat_context = _chat_context(raw_context)
        if chat_context is not None:
            request.chat_context.CopyFrom(chat_context)
        if sly:
            request.sly_data.update(sly)
        return request, thinking

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        state = context.call_context.state
        tokens = state.get(STREAMING_KEY) is True
        request, thinking = await self._request(context, tokens)  # bad input raises before a task exists
        metadata = [*state.get(GRPC_METADATA_KEY, []), ("agent-name", state[AGENT_KEY])]
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
        chat = asyncio.ensure_future(
            self._converse(request, metadata, thinking, updater, state, task_id, artifact_id)
        )
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
        self, request: agent_pb2.ChatRequest, metadata: list[tuple[str, Any]], thinking: bool,
        updater: TaskUpdater, state: Mapping[str, Any], task_id: str, artifact_id: str,
    ) -> chat_pb2.ChatMessage | None:
        """The chat; its answer, or None once the task has failed."""
        answer: chat_pb2.ChatMessage | None = None
        chunks = 0
        try:
            async for response in self._chat(request, metadata=metadata, timeout=self._timeout):
                message = response.response
                if message.type == chat_pb2.ChatMessage.TOKEN_DELTA:
                    if len(message.origin) == 1 and message.delta_kind == chat_pb2.ChatMessage.ANSWER and message.text:
                        await updater.add_artifact([Part(text=message.text)], artifact_id=artifact_id, name="answer",
                                                   append=chunks > 0, last_chunk=False)
                        chunks += 1
                elif message.type == chat_pb2.ChatMessage.AGENT_FRAMEWORK:
                    answer = message
                elif thinking and message.type in _THINKING_TYPES and message.text:
                    origin = "/".join(o.tool for o in message.origin)
                    await updater.update_status(TaskState.TASK_STATE_WORKING, updater.new_agent_message(
                        [Part(text=message.text)],
                        metadata={METADATA_KEY: {"type": chat_pb2.ChatMessage.ChatMessageType.Name(message.type),
                                                 "origin": origin}},
                    ))
        except grpc.aio.AioRpcError as error:
            failure = rpc_failure(error)
            reason = f"{error.code().name}: {failure.message}"
            log.info("A2A task %s failed: %s", task_id, reason)
            extra: dict[str, Any] | None = None
            if failure.is_refusal:  # which limit, when to retry: also in the failed task's message
                extra = {METADATA_KEY: failure.jsonrpc_data()}
                state.get(REFUSALS_KEY, []).append(failure)
            await updater.failed(updater.new_agent_message([Part(text=f"Error: {reason}")], metadata=extra))
            return None
        if answer is None:
            await updater.failed(updater.new_agent_message([Part(text="Error: the network gave no answer")]))
        return answer

    async def _finish(
        self, updater: TaskUpdater, conversation: str, answer: chat_pb2.ChatMessage, artifact_id: str
    ) -> None:
        extra: dict[str, Any] = {}
        if answer.HasField("chat_context"):
            chat_context = json_format.MessageToDict(answer.chat_context, preserving_proto_field_name=True)
            extra["chat_context"] = chat_context
            try:
                await self._conversations.put(conversation, chat_context)
            except StateUnavailable:
                pass  # logged by the state; the answer carries chat_context for the client to send back
        if answer.HasField("sly_data") and answer.sly_data.fields:
            extra["sly_data"] = json_format.MessageToDict(answer.sly_data)
        metadata = {METADATA_KEY: extra}
        parts = [Part(text=answer.text)]
        if answer.HasField("structure"):
            structure = struct_pb2.Value()
            structure.struct_value.CopyFrom(answer.structure)
            parts.append(Part(data=structure, media_type="application/json"))
        # The whole answer, replacing any streamed chunks (append false, same id).
        await updater.add_artifact(
            parts, artifact_id=artifact_id, name="answer", metadata=metadata, append=False, last_chunk=True
        )
        await updater.complete(updater.new_agent_message([Part(text=answer.text)], metadata=metadata))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The handler has already cancelled execute(): that cancels the StreamingChat call,
        # which cancels the chat and its LLM calls, as a client disconnect does.
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.cancel()


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
