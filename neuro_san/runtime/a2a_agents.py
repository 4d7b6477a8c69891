"""A2A agents as tools: ``"tools": ["a2a+https://host/path"]``.

The reference names an A2A agent by its base URL (its Agent Card is at
``<url>/.well-known/agent-card.json``) or by the card's own URL (ending in ``.json``).
The card is resolved with the official a2a-sdk on first use; the LLM sees a tool with
the card's description and a free-text ``inquiry``; one tool call sends one message
(a fresh A2A conversation each time, as for every external agent) and the answer's
text — the task's artifacts, or the agent's message — is the tool result.

Extra HTTP headers (an API key for the peer) come from the dict form of the reference
(see :mod:`neuro_san.network.a2a_refs`).

Failures (card not found, peer down, a failed or rejected task) become the tool's
``Error: …`` result, so the model can say so or try something else.

The SDK takes long to import, so it is imported in the functions that use it: a server
whose networks call no A2A agent never loads it.

This module is the A2A client and nothing else: the runtime reaches it through
:func:`is_a2a_ref` and :class:`A2AAgent`, which has the shape of
:class:`neuro_san.runtime.external.RemoteAgent`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from neuro_san.core.errors import UpstreamUnavailable
from neuro_san.core.messages import ChatMessage, ChatRequest, MessageType
from neuro_san.network.a2a_refs import a2a_headers, a2a_url, is_a2a_ref

__all__ = ["A2AAgent", "is_a2a_ref"]

#: The metadata key neuro-san A2A servers read sly_data from and return it under.
METADATA_KEY = "neuro_san"
#: Seconds to wait for the card, and for an answer.
CARD_TIMEOUT_SECONDS = 30.0
ANSWER_TIMEOUT_SECONDS = 600.0
CANCEL_TIMEOUT_SECONDS = 5.0

log = logging.getLogger(__name__)


def _error(ref: str, why: str) -> ChatMessage:
    return ChatMessage(MessageType.AGENT_FRAMEWORK, f"Error: A2A agent {a2a_url(ref)}: {why}")


class A2AAgent:
    """One A2A agent, resolved through its card on first use."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self.url = a2a_url(ref)
        self._card: Any = None

    def _http(self, timeout: float) -> Any:
        import httpx  # the a2a-sdk's own HTTP client

        return httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0), headers=a2a_headers(self.ref))

    async def _resolve(self, http: Any) -> Any:
        if self._card is None:
            # Lazy: the SDK (module docstring).
            from a2a.client import A2ACardResolver

            if self.url.lower().endswith(".json"):
                base, _, card_path = self.url.rpartition("/")
                resolver = A2ACardResolver(http, base, card_path)
            else:
                resolver = A2ACardResolver(http, self.url)
            self._card = await resolver.get_agent_card()
        return self._card

    async def function(self) -> Mapping[str, Any]:
        # Lazy: the SDK (module docstring).
        from a2a.client import A2AClientError

        try:
            async with self._http(CARD_TIMEOUT_SECONDS) as http:
                card = await self._resolve(http)
        except (A2AClientError, OSError) as error:
            raise UpstreamUnavailable(f"A2A agent {self.url}: {error}") from error
        skills = "; ".join(s.description or s.name for s in card.skills if s.description or s.name)
        description = card.description or card.name
        return {"description": f"{description} (skills: {skills})" if skills else description}

    async def chat(self, request: ChatRequest) -> AsyncIterator[ChatMessage | None]:
        """One message, one answer; failures are the answer ``Error: …``."""
        # Lazy: the SDK (module docstring).
        from a2a.client import A2AClientError, ClientConfig, ClientFactory
        from a2a.utils.errors import A2AError

        try:
            async with self._http(ANSWER_TIMEOUT_SECONDS) as http:
                card = await self._resolve(http)
                streaming = bool(card.capabilities.streaming)  # streamed: the task id comes first
                client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)
                try:
                    answer = await _ask(client, request, streaming)
                finally:
                    await client.close()
        except (A2AClientError, A2AError, OSError, ValueError) as error:
            answer = _error(self.ref, f"{type(error).__name__}: {error}")
        yield answer


async def _ask(client: Any, request: ChatRequest, streaming: bool) -> ChatMessage:
    """Send the inquiry and put the task back together from its events. If the caller is
    cancelled meanwhile, the A2A task is cancelled too (so the peer stops working).

    The exchange runs in a task of its own: a caller cancelled before the peer has named
    its task (a fast peer may start working first) still learns the id, for a bounded
    while, and cancels it; closing the stream alone would not stop an A2A task."""
    # Lazy: the SDK (module docstring).
    from a2a.helpers.proto_helpers import get_text_parts, new_text_message
    from a2a.types import Role, SendMessageRequest, Task

    message = new_text_message(request.user_text, role=Role.ROLE_USER)
    if request.sly_data:  # only what allow.to_downstream let out
        message.metadata.update({METADATA_KEY: {"sly_data": request.sly_data}})
    task = Task()
    named = asyncio.Event()

    async def exchange() -> ChatMessage | None:
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("message"):
                return ChatMessage(MessageType.AGENT_FRAMEWORK, "\n".join(get_text_parts(list(event.message.parts))))
            if event.HasField("task"):
                task.CopyFrom(event.task)
                named.set()
            elif event.HasField("status_update"):
                task.status.CopyFrom(event.status_update.status)
            elif event.HasField("artifact_update"):
                _add_artifact(task, event.artifact_update)
        return None

    running = asyncio.create_task(exchange())
    try:
        direct = await asyncio.shield(running)
    except asyncio.CancelledError:
        if streaming and not running.done():
            try:
                async with asyncio.timeout(CANCEL_TIMEOUT_SECONDS):
                    await named.wait()
            except TimeoutError:
                pass
            if task.id:
                await _cancel_quietly(client, task.id)
        running.cancel()
        raise
    if direct is not None:
        return direct
    if not task.id:
        return ChatMessage(MessageType.AGENT_FRAMEWORK, "Error: the A2A agent sent nothing")
    return _answer(task)


def _add_artifact(task: Any, update: Any) -> None:
    """As A2A defines a streamed artifact: ``append`` adds the parts to the artifact of the
    same id; without it the update replaces that artifact (a streamed answer's last chunk
    is the whole answer), or is a new one."""
    for artifact in task.artifacts:
        if artifact.artifact_id == update.artifact.artifact_id:
            if update.append:
                artifact.parts.extend(update.artifact.parts)
            else:
                artifact.CopyFrom(update.artifact)
            return
    task.artifacts.append(update.artifact)


async def _cancel_quietly(client: Any, task_id: str) -> None:
    # Lazy: the SDK (module docstring).
    from a2a.types import CancelTaskRequest

    try:
        async with asyncio.timeout(CANCEL_TIMEOUT_SECONDS):
            await client.cancel_task(CancelTaskRequest(id=task_id))
    except Exception:  # best effort: the peer may have finished or gone away
        log.debug("could not cancel A2A task %s", task_id, exc_info=True)


def _answer(task: Any) -> ChatMessage:
    # Lazy: the SDK (module docstring).
    from a2a.helpers.proto_helpers import get_text_parts
    from a2a.types import TaskState
    from google.protobuf import json_format

    status_text = "\n".join(get_text_parts(list(task.status.message.parts)))
    if task.status.state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED,
                             TaskState.TASK_STATE_CANCELED):
        state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower()
        return ChatMessage(MessageType.AGENT_FRAMEWORK, f"Error: the A2A task ended {state}: {status_text}")
    texts = [t for artifact in task.artifacts for t in get_text_parts(list(artifact.parts))]
    sly_data: dict[str, Any] | None = None
    for artifact in task.artifacts:
        extra = json_format.MessageToDict(artifact.metadata).get(METADATA_KEY, {})
        if isinstance(extra, dict) and isinstance(extra.get("sly_data"), dict):
            sly_data = {**(sly_data or {}), **_whole_numbers(extra["sly_data"])}
    return ChatMessage(MessageType.AGENT_FRAMEWORK, "\n".join(texts) or status_text, sly_data=sly_data)


def _whole_numbers(value: Any) -> Any:
    """JSON via protobuf Struct makes every number a float; whole ones become ints again."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value
