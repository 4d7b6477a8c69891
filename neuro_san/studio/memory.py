"""neuro-san-studio's ``PersistentMemoryMiddleware``, native.

The agent gets one tool, ``persistent_memory``, with an ``operation`` (``create``,
``read``, ``append``, ``delete``, ``search``, ``list``; ``enabled_operations`` narrows
them) and the ``topic`` / ``content`` / ``query`` / ``limit`` it needs, and a paragraph
in its system prompt saying when to use it (``preamble`` replaces it). Answers are
studio's envelopes: ``{"result": …}`` or ``{"error": "…"}``. The memory is the agent's:
scoped to ``(network, agent)`` and shared by every caller (studio's file backends are
single-user too); it lives in files under ``folder_name`` (``memory_store``). The ``mem0``
backend keeps it in the Mem0 Platform instead (``memory_mem0``), per user as well: the
request's ``sly_data["user_id"]`` when the args ask for ``sly_data``, as in studio.

With ``summarization.max_topic_size`` above 0, a topic that grows past it after a write
(or is found so on a read) is rewritten as a summary by ``summarization.model`` through
this server's LLM factory; a failed summary keeps the text as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuro_san.llm.interface import LlmMessage, ToolSpec
from neuro_san.middleware.interface import AgentMiddleware, Invocation, MiddlewareTool
from neuro_san.studio.config import MemorySettings
from neuro_san.studio.memory_mem0 import Mem0TopicStore
from neuro_san.studio.memory_store import JsonTopicStore, MarkdownTopicStore, MemoryBackendError, MemoryStore

log = logging.getLogger(__name__)

TOOL_NAME = "persistent_memory"
DEFAULT_SEARCH_LIMIT = 5
_REQUIRED: Mapping[str, tuple[str, ...]] = {
    "create": ("topic", "content"),
    "read": ("topic",),
    "append": ("topic", "content"),
    "delete": ("topic",),
    "search": ("query",),
    "list": (),
}

PREAMBLE = f"""You can keep facts across conversations with the '{TOOL_NAME}' tool.

How to use it:
- Look in memory only when this conversation does not already hold what you need.
- Topics and their content come from what the user said; do not make them up.
- Say only what the tool returned; never invent a memory.
- To recall, call 'list' first, then 'search' with words from the user's message.
- Before writing, check the list: for a subject that already has a topic, 'append' to that
  topic ('create' replaces the whole topic).
- Use 'delete' then 'create' only to replace a topic whose content is wrong."""


def _store(settings: MemorySettings, network: str, agent: str, sly_data: Mapping[str, Any]) -> MemoryStore:
    if settings.mem0 is not None:
        user = sly_data.get("user_id") if settings.user_from_sly_data else None
        return Mem0TopicStore(settings.mem0, network, agent, str(user) if user else None)
    folder = Path(settings.folder).expanduser()  # relative: to the working directory (the project root)
    if settings.backend == "markdown_file":
        return MarkdownTopicStore(folder, network, agent)
    return JsonTopicStore(folder, network, agent, settings.file_name)


class PersistentMemoryMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: MemorySettings) -> None:
        super().__init__(invocation)
        self.settings = settings
        ctx = invocation.ctx
        self.store = _store(settings, ctx.network.name, invocation.agent.name, ctx.sly_data)

    async def system_prompt(self) -> str | None:
        return self.settings.preamble or PREAMBLE

    def tools(self) -> list[MiddlewareTool]:
        allowed = sorted(self.settings.operations)
        text = {"type": "string"}
        spec = ToolSpec(
            name=TOOL_NAME,
            description=(
                "Long-term memory that outlives this conversation. Use it only when the conversation does not "
                f"already hold the answer. 'operation' is one of: {', '.join(allowed)}. Name the memory with "
                "'topic' (a short identifier such as 'coffee_preference'). create and append need 'content'; "
                "read and delete need 'topic'; search needs 'query' (and takes 'limit'); list needs nothing. "
                "append adds a timestamped line to the topic; create replaces it."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "operation": {"type": "string", "enum": allowed, "description": "The memory operation."},
                    "topic": {**text, "description": "The topic: letters, digits, '-' and '_'."},
                    "content": {**text, "description": "What to store (create, append)."},
                    "query": {**text, "description": "Words to search for (search)."},
                    "limit": {**text, "description": f"How many results at most (default {DEFAULT_SEARCH_LIMIT})."},
                },
                "required": ["operation"],
            },
        )
        return [MiddlewareTool(spec, self.handle)]

    async def handle(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        operation = str(arguments.get("operation") or "").strip().lower()
        if operation not in _REQUIRED:
            return {"error": "Missing or unknown operation. Must be one of: " + ", ".join(sorted(_REQUIRED))}
        if operation not in self.settings.operations:
            enabled = ", ".join(sorted(self.settings.operations))
            return {"error": f"Operation '{operation}' is not enabled for this agent. Enabled: {enabled}"}
        args = {key: str(value).strip() for key, value in arguments.items() if value is not None}
        for field in _REQUIRED[operation]:
            if not args.get(field):
                return {"error": f"Operation '{operation}' requires '{field}'."}
        try:
            return await self._run(operation, args)
        except MemoryBackendError as error:  # the Mem0 Platform failed: the model is told, the chat goes on
            log.warning("memory %s failed: %s", operation, error)
            return {"error": str(error)}

    async def _run(self, operation: str, args: Mapping[str, str]) -> dict[str, Any]:
        topic = args.get("topic", "")
        if operation == "create":
            await self.store.create(topic, args["content"])
            await self._maybe_summarise(topic, args["content"])
            return {"result": {"status": "created", "topic": topic}}
        if operation == "append":
            content = await self.store.append(topic, args["content"])
            content = await self._maybe_summarise(topic, content)
            return {"result": {"status": "appended", "topic": topic, "content": content}}
        if operation == "read":
            found = await self.store.read(topic)
            if found is None:
                return {"error": f"No memory entry found for topic='{topic}'."}
            return {"result": {"topic": topic, "content": await self._maybe_summarise(topic, found)}}
        if operation == "delete":
            await self.store.delete(topic)
            return {"result": {"status": "deleted", "topic": topic}}
        if operation == "search":
            limit = _positive(args.get("limit"), DEFAULT_SEARCH_LIMIT)
            return {"result": {"results": await self.store.search(args["query"], limit)}}
        return {"result": {"topics": sorted(await self.store.topics())}}

    async def _maybe_summarise(self, topic: str, content: str) -> str:
        size = self.settings.max_topic_size
        if size <= 0 or len(content) <= size:
            return content
        ctx = self.invocation.ctx
        prompt = (
            f"Rewrite the memory notes of the topic '{topic}' as a shorter summary that keeps every fact, "
            "name, number and date. Answer with the summary only."
            + (f" {self.settings.personalization}" if self.settings.personalization else "")
            + f"\n\nNotes:\n{content}"
        )
        try:
            model = ctx.models.create({"model_name": self.settings.summary_model}, ctx.llm_keys)
            response = await model.complete([LlmMessage(role="user", content=prompt)], [])
        except Exception as error:  # noqa: BLE001 - a failed summary keeps the notes, as in studio
            log.warning("memory topic %r not summarised: %s", topic, error)
            return content
        ctx.record_usage(f"{model.provider}:{model.model_name}", response.usage)
        summary = (response.text or "").strip()
        if not summary or summary == content:
            return content
        await self.store.replace_if_unchanged(topic, content, summary)
        return summary


def _positive(value: Any, default: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default
