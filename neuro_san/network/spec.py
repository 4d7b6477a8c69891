"""The validated model of an agent network, whatever file format it came from.

A network file (neuro-san's format) has top-level ``llm_config``, ``tools``,
``commondefs``, ``metadata`` and limits; ``tools`` lists the agents, the first being
the front man. The loader (``neuro_san.network.loader``) reads a file, applies
``commondefs``, validates, and builds a :class:`NetworkSpec`; nothing else in the
server looks at raw network dicts.

Specs are immutable and shared: a chat in flight keeps the spec it started with even
when a hot reload replaces the network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from neuro_san.network.middleware_config import MiddlewareConfig

from neuro_san.network.mcp_refs import McpServerRef
from neuro_san.network.served_as_mcp import McpSetting

AgentKind = Literal["llm_agent", "coded_tool"]

EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    # dataclasses refuse an unhashable default such as a mappingproxy; a factory that
    # returns the one shared EMPTY is accepted and costs nothing.
    return EMPTY


def is_external_ref(tool: str) -> bool:
    """True for tool references that name another network rather than a local agent:
    ``/name`` (same server), ``http(s)://host:port/name``, ``grpc://host:port/name``."""
    return tool.startswith("/") or "://" in tool


@dataclass(frozen=True, slots=True)
class SlyDataRule:
    """Which sly_data keys cross a boundary, and under which name.

    ``keys`` maps an allowed key to the name it gets on the other side (usually the
    same). An empty rule lets nothing through: the default in every direction.
    """

    keys: Mapping[str, str] = field(default_factory=_empty)

    def apply(self, sly_data: Mapping[str, Any]) -> dict[str, Any]:
        return {new: sly_data[old] for old, new in self.keys.items() if old in sly_data}

    def __bool__(self) -> bool:
        return bool(self.keys)


@dataclass(frozen=True, slots=True)
class AllowRules:
    """An agent's ``allow`` block."""

    #: Front man: which sly_data keys go back to the client.
    to_upstream: SlyDataRule = SlyDataRule()
    #: Which sly_data keys are sent to external agents this agent calls.
    to_downstream: SlyDataRule = SlyDataRule()
    #: Which sly_data keys external agents may send back.
    from_downstream: SlyDataRule = SlyDataRule()
    #: Whether an external agent's own messages are forwarded to the client.
    from_downstream_messages: bool = False
    #: False hides this agent's tools in Connectivity.
    connectivity: bool = True
    #: A coded tool gets ``args["reservationist"]`` (temporary networks).
    reservations: bool = False


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One entry of a network's ``tools`` list."""

    name: str
    #: The ``function`` dict as written (description, parameters, sly_data_schema…).
    function: Mapping[str, Any] = field(default_factory=_empty)
    instructions: str = ""
    command: str = ""
    #: Local agent names and external references, in the order written.
    tools: tuple[str, ...] = ()
    #: The network's llm_config overlaid with the agent's own.
    llm_config: Mapping[str, Any] = field(default_factory=_empty)
    #: ``module.Class`` of a coded tool, or None for an LLM agent.
    class_name: str | None = None
    args: Mapping[str, Any] = field(default_factory=_empty)
    allow: AllowRules = AllowRules()
    display_as: str | None = None
    max_message_history: int | None = None
    structure_formats: tuple[str, ...] = ()
    metadata: Mapping[str, Any] | None = None
    #: Per-agent overrides of the network's limits (None: use the network's).
    max_iterations: int | None = None
    #: Validated ``middleware`` entries (``neuro_san.middleware``), in list order.
    middleware: tuple[MiddlewareConfig, ...] = ()
    #: The MCP servers among ``tools`` (string ones stay in ``tools`` too; dict ones only here).
    mcp_servers: tuple[McpServerRef, ...] = ()
    #: How an answer holding an error fragment is rewritten: ``string`` or ``json``.
    error_formatter: str = "string"
    #: Text that marks an LLM agent's answer as an error (``Agent stopped`` always does).
    error_fragments: tuple[str, ...] = ()

    @property
    def kind(self) -> AgentKind:
        return "coded_tool" if self.class_name else "llm_agent"

    @property
    def description(self) -> str:
        return str(self.function.get("description", ""))

    @property
    def parameters(self) -> Mapping[str, Any] | None:
        params = self.function.get("parameters")
        return params if isinstance(params, Mapping) else None


@dataclass(frozen=True, slots=True)
class NetworkSpec:
    """A validated agent network.

    ``name`` is the agent name clients call it by: the file's path relative to its
    manifest, without extension (``deep/math_guy``).
    """

    name: str
    #: Agents by name, front man first, in file order.
    agents: Mapping[str, AgentSpec]
    front_man: str
    metadata: Mapping[str, Any] | None = None
    #: LLM round trips allowed per agent invocation.
    max_iterations: int = 20
    #: Wall-clock budget of one request (0: none).
    max_execution_seconds: float = 300.0
    #: Budget of one request including waiting on external agents (0: none).
    request_timeout_seconds: float = 0.0
    #: Attempts per LLM call on retryable errors.
    max_attempts: int = 3
    #: LLM tokens one request may spend (0: the server's AGENT_MAX_TOKENS_PER_REQUEST).
    max_tokens_per_request: int = 0
    #: Stream TOKEN_DELTA messages to requests that do not say (``stream_tokens`` key).
    stream_tokens: bool = False
    #: The file it was read from.
    source: str = ""
    #: Listed by Concierge.
    public: bool = True
    #: The manifest's ``mcp`` setting (served as an MCP tool, and under which name).
    mcp: McpSetting = McpSetting()
    #: Top-level sly_data_schema merged into the front man's function.
    extra: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def front(self) -> AgentSpec:
        return self.agents[self.front_man]

    def external_refs(self) -> set[str]:
        return {t for a in self.agents.values() for t in a.tools if is_external_ref(t)}


class NetworkSource(Protocol):
    """Where the runtime and the service find networks by name (the registry).

    Implementations swap whole specs atomically on reload; callers hold on to the spec
    they got for the duration of a request.
    """

    def get(self, name: str) -> NetworkSpec | None: ...

    def networks(self) -> Mapping[str, NetworkSpec]:
        """Every served network, by name."""
        ...
