"""The one interface between transports and the agent runtime.

A transport (the gRPC servicers; in-process callers such as external ``/name`` agents
and tests) asks an :class:`AgentApi` for what it needs, by agent name. It knows
nothing of gRPC or HTTP; it raises ``neuro_san.core.errors`` exceptions, which each
transport maps through the one table in that module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from neuro_san.core.messages import AgentInfo, ChatMessage, ChatRequest, ConnectivityEntry


class AgentApi(Protocol):
    def has_agent(self, agent: str) -> bool:
        """Whether ``agent`` is served (public or not)."""
        ...

    def is_public(self, agent: str) -> bool:
        """Whether ``agent`` is listed publicly (True for unknown agents)."""
        ...

    def function(self, agent: str) -> Mapping[str, Any]:
        """The front man's ``function`` dict. Raises AgentNotFound."""
        ...

    def connectivity(
        self, agent: str
    ) -> tuple[list[ConnectivityEntry], Mapping[str, Any] | None]:
        """One entry per node reachable from the front man, and the network metadata."""
        ...

    def list_agents(self, include_private: bool = False) -> list[AgentInfo]:
        """The public networks (and the private ones when asked), sorted by name."""
        ...

    def chat(self, agent: str, request: ChatRequest) -> AsyncIterator[ChatMessage | None]:
        """Run one turn. Yields the messages the request's filter lets through, the last
        being the AGENT_FRAMEWORK answer; raises a NeuroSanError when the turn fails.
        ``None`` stands for "an empty response": a request with no user text gets
        exactly one, at once, and no LLM is called (as upstream).
        Closing the iterator (or cancelling its consumer) cancels all the turn's work.
        Raises AgentNotFound before yielding anything for an unknown agent."""
        ...
