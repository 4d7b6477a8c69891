"""Run the agent runtime in-process over networks given as dicts (for runtime tests)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuro_san.core.messages import ChatContext, ChatFilter, ChatMessage, ChatRequest, MessageType, origin_str
from neuro_san.llm.factory import LlmFactory
from neuro_san.network.builder import build_network
from neuro_san.network.spec import NetworkSpec
from neuro_san.runtime.coded_tools import CodedToolResolver
from neuro_san.runtime.network_runner import NetworkRunner

#: Every sly_data value in the suite's tests starts with this, so the audit can find leaks.
SLY_MARKER = "sly-secret-"


class DictSource:
    """A NetworkSource over networks built from in-memory documents."""

    def __init__(self, documents: Mapping[str, Any]) -> None:
        self._networks = {name: build_network(doc, f"<{name}>", name) for name, doc in documents.items()}

    def get(self, name: str) -> NetworkSpec | None:
        return self._networks.get(name)

    def networks(self) -> Mapping[str, NetworkSpec]:
        return self._networks


def make_host(
    documents: Mapping[str, Any],
    tool_roots: list[Path] | None = None,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> tuple[NetworkRunner, LlmFactory]:
    factory = LlmFactory(env=dict(env or {}))
    host = NetworkRunner(DictSource(documents), factory, CodedToolResolver(tool_roots or []), **options)
    return host, factory


async def run_chat(
    host: NetworkRunner,
    agent: str,
    text: str,
    *,
    maximal: bool = False,
    sly_data: dict[str, Any] | None = None,
    chat_context: ChatContext | None = None,
) -> list[ChatMessage]:
    request = ChatRequest(
        user_text=text,
        sly_data=dict(sly_data or {}),
        chat_context=chat_context,
        chat_filter=ChatFilter.MAXIMAL if maximal else ChatFilter.MINIMAL,
    )
    return [m async for m in host.chat(agent, request) if m is not None]


def steps(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """(type name, dotted origin) of each message, for order assertions."""
    return [(MessageType(m.type).name, origin_str(m.origin)) for m in messages]
