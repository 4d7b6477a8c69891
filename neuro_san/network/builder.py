"""Validating a network document (plain data, commondefs applied) into a NetworkSpec.

Every check reports a :class:`NetworkLoadError` with the key path of the offending value,
``tools[2].tools[0]`` style, so the operator can find it. A fault in one agent or one
``tools`` entry does not hide the next: they are collected and raised together
(:class:`NetworkFaults`), so ``validate`` and the server's log show every one in one run;
only faults that leave nothing to build on (the top level, the agent list, names) stop
at once. neuro-san keys that change
behaviour are implemented or refused (``upstream_keys``, ``neuro_san.middleware``,
``neuro_san.toolbox``); keys that change nothing observable (``verbose``) or that
neuro-san does not know either are accepted and logged at debug level.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.core.load_errors import NetworkFaults, NetworkLoadError, type_name
from neuro_san.core.mappings import deep_merge
from neuro_san.network.a2a_refs import a2a_url, is_a2a_ref, ref_from_dict
from neuro_san.network.allow import parse_allow
from neuro_san.network.files import read_document
from neuro_san.network.mcp_refs import McpServerRef, is_mcp_url, parse_mcp_dict
from neuro_san.network.middleware_config import MiddlewareConfig, parse_middleware
from neuro_san.network.parameters import parameters_faults
from neuro_san.network.spec import EMPTY, AgentSpec, NetworkSpec, is_external_ref
from neuro_san.network.upstream_keys import error_handling, refuse_unsupported_keys
from neuro_san.network.url_refs import url_ref_problem
from neuro_san.toolbox.resolve import expand_toolbox_agents

logger = logging.getLogger(__name__)

#: neuro-san issue #418: dots and spaces in names break the agent graph.
AGENT_NAME = re.compile(r"[A-Za-z0-9_-]+")
#: ``module.Class``: at least two dotted identifiers.
CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")

NETWORK_KEYS = frozenset(
    {
        "llm_config", "tools", "commondefs", "metadata", "max_iterations", "max_steps",
        "max_execution_seconds", "request_timeout_seconds", "max_attempts", "sly_data_schema",
        "toolbox_info_file",
        "max_tokens_per_request", "stream_tokens", "error_formatter", "error_fragments",
    }
)  # fmt: skip
AGENT_KEYS = frozenset(
    {
        "name", "function", "instructions", "command", "tools", "llm_config", "class",
        "toolbox", "args", "allow", "display_as", "max_message_history", "structure_formats",
        "metadata", "max_iterations", "max_steps", "middleware", "error_formatter", "error_fragments",
    }
)  # fmt: skip


class _Checker:
    """Type checks that all report against one file."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, key_path: str, reason: str) -> NetworkLoadError:
        return NetworkLoadError(self.file, key_path, reason)

    def optional_dict(self, value: Any, key_path: str) -> dict[str, Any] | None:
        if value is None or isinstance(value, dict):
            return value
        raise self.fail(key_path, f"must be a dict, not {type_name(value)}")

    def optional_str(self, value: Any, key_path: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raise self.fail(key_path, f"must be a string, not {type_name(value)}")

    def optional_int(self, value: Any, key_path: str, minimum: int) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key_path, f"must be an integer, not {type_name(value)}")
        if value < minimum:
            raise self.fail(key_path, f"must be at least {minimum}, not {value}")
        return value

    def optional_seconds(self, value: Any, key_path: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key_path, f"must be a number of seconds, not {type_name(value)}")
        if value < 0:
            raise self.fail(key_path, f"must not be negative, not {value}")
        return float(value)


def build_network(
    document: Any, file: str, name: str, public: bool = True, faults: list[NetworkLoadError] | None = None
) -> NetworkSpec:
    """Validate ``document`` and build the spec of the network called ``name``.

    With ``faults`` given, the faults of agents and ``tools`` entries are appended to it
    and a spec of the agents that built is returned (for further checks only: it must
    not be served while ``faults`` is not empty); without, they are raised together.
    """
    collected: list[NetworkLoadError] = [] if faults is None else faults
    spec = _build(document, file, name, public, collected)
    if faults is None and collected:
        raise NetworkFaults(collected)
    return spec


def _build(document: Any, file: str, name: str, public: bool, faults: list[NetworkLoadError]) -> NetworkSpec:
    check = _Checker(file)
    if not isinstance(document, dict):
        raise check.fail("", f"the top level must be a dict, not {type_name(document)}")
    raw_agents = document.get("tools")
    if raw_agents is None:
        raise check.fail("tools", "missing: list the agents, the front man first")
    if not isinstance(raw_agents, list) or not raw_agents:
        raise check.fail("tools", "must be a non-empty list of agents, the front man first")
    refuse_unsupported_keys(document, file)
    # Toolbox agents become coded tools; the toolbox file is read as network files are.
    raw_agents = expand_toolbox_agents(raw_agents, document, file, read_document)

    network_llm = check.optional_dict(document.get("llm_config"), "llm_config") or {}
    metadata = check.optional_dict(document.get("metadata"), "metadata")
    global_schema = check.optional_dict(document.get("sly_data_schema"), "sly_data_schema")
    names = _agent_names(raw_agents, check)
    called = _called_agents(raw_agents, names, check, faults)

    agents: dict[str, AgentSpec] = {}
    for index, raw in enumerate(raw_agents):
        key_path = f"tools[{index}]"
        try:
            agent = _build_agent(raw, key_path, index == 0, called, network_llm, check)
            agents[agent.name] = replace(agent, **error_handling(raw, document))
        except NetworkLoadError as fault:
            faults.append(fault)
            continue
        faults.extend(parameters_faults(agent.function.get("parameters"), file, f"{key_path}.function.parameters"))

    front_man = names[0]
    if global_schema and front_man in agents:
        agents[front_man] = _with_global_schema(agents[front_man], global_schema)

    extra: dict[str, Any] = {}
    if global_schema is not None:
        extra["sly_data_schema"] = global_schema
    for key, value in document.items():
        if key not in NETWORK_KEYS:
            logger.debug(
                "%s: top-level key %r is not used by this server; kept in extra", file, key
            )
            extra[key] = value

    limits = _network_limits(document, check)
    return NetworkSpec(
        name=name,
        agents=MappingProxyType(agents),
        front_man=front_man,
        metadata=_frozen(metadata) if metadata is not None else None,
        source=file,
        public=public,
        extra=MappingProxyType(extra),
        **limits,
    )


def _agent_names(raw_agents: list[Any], check: _Checker) -> list[str]:
    names: list[str] = []
    for index, raw in enumerate(raw_agents):
        key_path = f"tools[{index}]"
        if not isinstance(raw, dict):
            raise check.fail(key_path, f"an agent must be a dict, not {type_name(raw)}")
        name = raw.get("name")
        if name is None:
            raise check.fail(key_path, "missing 'name'")
        if not isinstance(name, str) or not AGENT_NAME.fullmatch(name):
            raise check.fail(
                f"{key_path}.name",
                f"invalid agent name {name!r}: use letters, digits, '-' and '_' only",
            )
        if name in names:
            raise check.fail(f"{key_path}.name", f"duplicate agent name {name!r}")
        names.append(name)
    return names


def _called_agents(
    raw_agents: list[Any], names: list[str], check: _Checker, faults: list[NetworkLoadError]
) -> set[str]:
    """Check every ``tools`` reference (each fault into ``faults``) and return the local
    agents that are called."""
    called: set[str] = set()
    known = set(names)
    for index, raw in enumerate(raw_agents):
        tools = raw.get("tools")
        key_path = f"tools[{index}].tools"
        if tools is None:
            continue
        if not isinstance(tools, list):
            faults.append(check.fail(key_path, f"must be a list of agent names, not {type_name(tools)}"))
            continue
        for position in range(len(tools)):
            try:
                if _check_tool(tools, position, f"{key_path}[{position}]", known, check):
                    called.add(tools[position])
            except NetworkLoadError as fault:
                faults.append(fault)
    return called


def _check_tool(tools: list[Any], position: int, tool_path: str, known: set[str], check: _Checker) -> bool:
    """Check one ``tools`` entry (a dict A2A entry becomes its string form in place);
    True when it names a local agent."""
    tool = tools[position]
    if isinstance(tool, dict) and "a2a" in tool:  # an A2A agent with extra headers
        try:
            tools[position] = tool = ref_from_dict(tool, tool_path)
        except ConfigurationError as error:
            raise check.fail(tool_path, str(error)) from None
    if isinstance(tool, dict):
        _, sub_key, reason = parse_mcp_dict(tool, position)
        if reason:
            raise check.fail(tool_path + sub_key, reason)
        return False
    if not isinstance(tool, str) or not tool:
        raise check.fail(tool_path, f"must be an agent name, a URL or an MCP server dict, not {tool!r}")
    if is_a2a_ref(tool):
        try:
            a2a_url(tool)
        except ConfigurationError as error:
            raise check.fail(tool_path, str(error)) from None
    elif "://" in tool:
        problem = url_ref_problem(tool)
        if problem:
            raise check.fail(tool_path, problem)
    if is_external_ref(tool):
        return False
    if tool not in known:
        raise check.fail(tool_path, f"unknown agent {tool!r}{_closest(tool, known)}")
    return True


def _closest(name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def _build_agent(
    raw: dict[str, Any],
    key_path: str,
    is_front_man: bool,
    called: set[str],
    network_llm: dict[str, Any],
    check: _Checker,
) -> AgentSpec:
    name: str = raw["name"]
    if "toolbox" in raw:
        raise check.fail(f"{key_path}.toolbox", "toolbox tools (LangChain) are not supported")
    class_name = raw.get("class")
    if class_name is not None:
        if is_front_man:
            raise check.fail(
                f"{key_path}.class",
                "the front man (first agent) cannot be a coded tool: it must not have 'class'",
            )
        if not isinstance(class_name, str) or not CLASS_NAME.fullmatch(class_name):
            raise check.fail(
                f"{key_path}.class", f"must look like 'module.Class', not {class_name!r}"
            )

    function = _function(raw.get("function"), f"{key_path}.function", name in called, check)
    llm_config = check.optional_dict(raw.get("llm_config"), f"{key_path}.llm_config") or {}
    args = check.optional_dict(raw.get("args"), f"{key_path}.args")
    metadata = check.optional_dict(raw.get("metadata"), f"{key_path}.metadata")
    max_iterations = _max_iterations(raw, key_path, check)

    for key in raw:
        if key not in AGENT_KEYS:
            logger.debug("%s: %s.%s is not used by this server; ignored", check.file, key_path, key)

    return AgentSpec(
        name=name,
        function=_frozen(function),
        instructions=check.optional_str(raw.get("instructions"), f"{key_path}.instructions") or "",
        command=check.optional_str(raw.get("command"), f"{key_path}.command") or "",
        tools=tuple(t for t in raw.get("tools") or () if isinstance(t, str)),
        llm_config=_frozen({**network_llm, **llm_config}),
        class_name=class_name,
        args=_frozen(args or {}),
        allow=parse_allow(raw.get("allow"), check.file, f"{key_path}.allow"),
        display_as=check.optional_str(raw.get("display_as"), f"{key_path}.display_as"),
        max_message_history=check.optional_int(
            raw.get("max_message_history"), f"{key_path}.max_message_history", minimum=0
        ),
        structure_formats=_structure_formats(
            raw.get("structure_formats"), f"{key_path}.structure_formats", check
        ),
        metadata=_frozen(metadata) if metadata is not None else None,
        max_iterations=max_iterations,
        middleware=_middleware(raw, key_path, class_name, check),
        mcp_servers=_mcp_servers(raw.get("tools") or ()),
    )


def _mcp_servers(tools: Sequence[Any]) -> tuple[McpServerRef, ...]:
    """The MCP servers among already-checked ``tools`` entries, in written order."""
    servers = []
    for position, tool in enumerate(tools):
        if isinstance(tool, dict):
            ref, _, _ = parse_mcp_dict(tool, position)
            if ref is not None:
                servers.append(ref)
        elif is_mcp_url(tool):
            servers.append(McpServerRef(tool, None, position, listed=True))
    return tuple(servers)


def _middleware(
    raw: dict[str, Any], key_path: str, class_name: str | None, check: _Checker
) -> tuple[MiddlewareConfig, ...]:
    if class_name is not None and raw.get("middleware"):
        raise check.fail(f"{key_path}.middleware", "middleware acts on LLM agents; this agent is a coded tool")
    return parse_middleware(raw.get("middleware"), check.file, f"{key_path}.middleware")


def _function(raw: Any, key_path: str, is_called: bool, check: _Checker) -> dict[str, Any]:
    """Agents that others call need a described function: it is what the calling LLM
    sees. The front man and agents nobody calls may leave it out."""
    if raw is None:
        if is_called:
            raise check.fail(key_path, "missing: an agent that others call needs a function")
        return {}
    if not isinstance(raw, dict):
        raise check.fail(key_path, f"must be a dict, not {type_name(raw)}")
    description = raw.get("description")
    if is_called and description is None:
        raise check.fail(f"{key_path}.description", "missing: the caller's LLM needs it")
    check.optional_str(description, f"{key_path}.description")
    check.optional_dict(raw.get("parameters"), f"{key_path}.parameters")
    check.optional_dict(raw.get("sly_data_schema"), f"{key_path}.sly_data_schema")
    return raw


def _structure_formats(raw: Any, key_path: str, check: _Checker) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return tuple(raw)
    raise check.fail(key_path, f"must be a string or a list of strings, not {raw!r}")


def _max_iterations(raw: dict[str, Any], prefix: str, check: _Checker) -> int | None:
    # max_steps is upstream's current name, max_iterations the older one; either works.
    key = "max_iterations" if "max_iterations" in raw else "max_steps"
    return check.optional_int(raw.get(key), f"{prefix}.{key}" if prefix else key, minimum=1)


def _network_limits(document: dict[str, Any], check: _Checker) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    iterations = _max_iterations(document, "", check)
    if iterations is not None:
        limits["max_iterations"] = iterations
    for key in ("max_execution_seconds", "request_timeout_seconds"):
        seconds = check.optional_seconds(document.get(key), key)
        if seconds is not None:
            limits[key] = seconds
    attempts = check.optional_int(document.get("max_attempts"), "max_attempts", minimum=1)
    if attempts is not None:
        limits["max_attempts"] = attempts
    tokens = check.optional_int(document.get("max_tokens_per_request"), "max_tokens_per_request", minimum=1)
    if tokens is not None:
        limits["max_tokens_per_request"] = tokens
    stream_tokens = document.get("stream_tokens")
    if stream_tokens is not None:
        if not isinstance(stream_tokens, bool):
            raise check.fail("stream_tokens", f"must be true or false, not {type_name(stream_tokens)}")
        limits["stream_tokens"] = stream_tokens
    return limits


def _with_global_schema(front: AgentSpec, global_schema: dict[str, Any]) -> AgentSpec:
    """Merge the top-level sly_data_schema under the front man's own (his wins)."""
    own = front.function.get("sly_data_schema") or {}
    function = {**front.function, "sly_data_schema": deep_merge(global_schema, own)}
    return replace(front, function=_frozen(function))


def _frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value)) if value else EMPTY
