"""neuro-san-studio's Agent Network Designer validation middlewares, native.

Both check the network definition the designer's tools keep in
``sly_data["agent_network_definition"]`` (``{agent name: {instructions, description,
tools, args…}}``) once the model answers without tool calls, and send the model back
with the problems (``review``, LangChain's ``after_agent`` with ``jump_to: model``):

- ``AgentNetworkStructureValidationMiddleware``: the shape of ``tools`` and
  ``args.tools``, cycles, tools naming agents that do not exist, exactly one front man
  and no unreachable agent, with neuro-san's validators' messages, sent as
  ``Errors detected:`` + one ``- <error>`` line each + ``Use your tools to fix the errors.``;
- ``AgentNetworkInstructionsValidationMiddleware``: empty or non-string ``instructions``
  and descriptions, sent as ``Error(s):`` + one line each.

No definition at all sends the model back with studio's "No agent network found" text.
Not checked here (studio also asks neuro-san's toolbox and URL validators): that toolbox
names and ``/network`` or MCP URLs exist (docs/compatibility.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuro_san.middleware.interface import AgentMiddleware

DEFINITION_KEY = "agent_network_definition"


def _is_url_or_path(tool: str) -> bool:
    return tool.startswith(("/", "http://", "https://"))


def _tools(spec: Any) -> list[Any]:
    tools = spec.get("tools") if isinstance(spec, Mapping) else None
    return tools if isinstance(tools, list) else []


def _args_tools(spec: Any) -> list[Any]:
    args = spec.get("args") if isinstance(spec, Mapping) else None
    found = args.get("tools") if isinstance(args, Mapping) else None
    if isinstance(found, Mapping):
        return list(found.values())
    return found if isinstance(found, list) else []


def _names(items: list[Any]) -> list[str]:
    return [item for item in items if isinstance(item, str)]


def _element_errors(items: Any, allowed: tuple[type, ...], label: str, agent: str, field: str) -> list[str]:
    pairs = items.items() if isinstance(items, Mapping) else enumerate(items)
    return [
        f"{agent} '{field}[{key!r}]' must be a {label}, got {type(value).__name__}."
        if isinstance(items, Mapping)
        else f"{agent} '{field}[{key}]' must be a {label}, got {type(value).__name__}."
        for key, value in pairs
        if not isinstance(value, allowed)
    ]


def shape_errors(network: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    for name, spec in network.items():
        tools = spec.get("tools") if isinstance(spec, Mapping) else None
        if tools is not None:
            if not isinstance(tools, list):
                errors.append(f"{name} 'tools' must be a list, got {type(tools).__name__}.")
            else:
                errors += _element_errors(tools, (str, dict), "str or dict", name, "tools")
        args = spec.get("args") if isinstance(spec, Mapping) else None
        if isinstance(args, Mapping) and "tools" in args:
            found = args["tools"]
            if not isinstance(found, dict | list):
                errors.append(f"{name} 'args.tools' must be a dict or list, got {type(found).__name__}.")
            else:
                errors += _element_errors(found, (str,), "str (agent name)", name, "args.tools")
    return errors


def cycle_errors(network: Mapping[str, Any]) -> list[str]:
    state: dict[str, str] = {}
    cyclical: set[str] = set()

    def visit(agent: str, path: list[str]) -> None:
        if state.get(agent) == "active":
            cyclical.update(path[path.index(agent) :])
            return
        if state.get(agent) == "done":
            return
        state[agent] = "active"
        path.append(agent)
        for child in _names(_tools(network.get(agent, {}))):
            if child in network:
                visit(child, path)
        path.pop()
        state[agent] = "done"

    for agent in network:
        if agent not in state:
            visit(agent, [])
    return [f"Cyclical dependencies found in agents: {sorted(cyclical)}"] if cyclical else []


def missing_node_errors(network: Mapping[str, Any]) -> list[str]:
    errors = []
    for name, spec in network.items():
        missing = [t for t in _names(_tools(spec)) if not _is_url_or_path(t) and t not in network]
        if missing:
            listed = ", ".join(f"'{tool}'" for tool in missing)
            errors.append(f"Agent '{name}' references non-existent agent(s) in tools: {listed}")
    return errors


def reachability_errors(network: Mapping[str, Any]) -> list[str]:
    def down(spec: Any) -> list[str]:
        return [t for t in _names(_tools(spec) + _args_tools(spec)) if not _is_url_or_path(t)]

    called: set[str] = set()
    callers: set[str] = set()
    for name, spec in network.items():
        children = down(spec)
        if children:
            callers.add(name)
            called.update(children)
    front = callers - called
    if not front and len(network) == 1:
        front = set(network)
    if not front:
        return ["No front man agent found in network"]
    if len(front) > 1:
        return [f"Multiple front man agents found: {sorted(front)}. Expected exactly one."]
    reached: set[str] = set()
    pending = list(front)
    while pending:
        agent = pending.pop()
        if agent in reached or agent not in network:
            continue
        reached.add(agent)
        pending += down(network[agent])
    unreachable = set(network) - reached
    return [f"Unreachable agents found: {sorted(unreachable)}"] if unreachable else []


def keyword_errors(network: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    for name, spec in network.items():
        if not isinstance(spec, Mapping):
            continue
        for key, label in (("description", "function.description"), ("instructions", "instructions")):
            value = spec.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                errors.append(f"{name} '{label}' must be a str, got {type(value).__name__}.")
            elif not value.strip():
                errors.append(f"{name} '{label}' cannot be empty.")
    return errors


class _DesignerValidation(AgentMiddleware):
    no_network = ""

    def check(self, network: Mapping[str, Any]) -> str | None:
        raise NotImplementedError

    async def review(self, answer: str) -> str | None:
        network = self.invocation.ctx.sly_data.get(DEFINITION_KEY)
        if not network:
            return self.no_network
        if not isinstance(network, Mapping):
            return f"Errors detected:\n- the agent network definition must be a dict, not {type(network).__name__}"
        return self.check(network)


class StructureValidationMiddleware(_DesignerValidation):
    no_network = "Error: No agent network found. Please create a new agent network using `create_new_network` tool"

    def check(self, network: Mapping[str, Any]) -> str | None:
        errors = shape_errors(network) + cycle_errors(network) + missing_node_errors(network)
        errors += reachability_errors(network)
        if not errors:
            return None
        lines = "\n".join(f"- {error}" for error in errors)
        return f"Errors detected:\n{lines}\n\nUse your tools to fix the errors."


class InstructionsValidationMiddleware(_DesignerValidation):
    no_network = "Error: No agent network found. Cannot edit or create instructions or description."

    def check(self, network: Mapping[str, Any]) -> str | None:
        errors = keyword_errors(network)
        return "Error(s):\n" + "\n".join(errors) if errors else None
