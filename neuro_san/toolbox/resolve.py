"""Turning ``toolbox`` agents into coded-tool agents when a network loads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.core.mappings import deep_merge
from neuro_san.settings import process_env
from neuro_san.toolbox.defaults import DEFAULT_TOOLBOX, NATIVE_CLASSES, REMOVED_ENTRIES

TOOLBOX_ENV = "AGENT_TOOLBOX_INFO_FILE"
#: Keys a toolbox agent may have; the rest (instructions, function, tools…) come from
#: the toolbox entry or make no sense for a tool, and are refused rather than ignored.
TOOLBOX_AGENT_KEYS = frozenset({"name", "toolbox", "args", "display_as", "allow", "metadata", "verbose"})
_DEFAULT_NAME = "the default toolbox"
#: How a toolbox info file is read: the network loader's own reader (HOCON includes, the
#: parse cache), handed in by the loader, since this package sits below it.
ReadDocument = Callable[[Path], Any]


def expand_toolbox_agents(
    raw_agents: list[Any], document: Mapping[str, Any], file: str, read_document: ReadDocument
) -> list[Any]:
    """``raw_agents`` with every ``toolbox`` agent rewritten as the coded-tool agent its
    toolbox entry describes. The toolbox files are read only when an agent uses one."""
    if not any(isinstance(raw, dict) and "toolbox" in raw for raw in raw_agents):
        return raw_agents
    entries, user_file = load_toolbox(document, file, read_document)
    expanded: list[Any] = []
    for index, raw in enumerate(raw_agents):
        if isinstance(raw, dict) and "toolbox" in raw:
            raw = _coded_tool_agent(raw, f"tools[{index}]", index == 0, entries, user_file, file)
        expanded.append(raw)
    return expanded


def load_toolbox(
    document: Mapping[str, Any], file: str, read_document: ReadDocument
) -> tuple[dict[str, Any], str | None]:
    """The default toolbox deep-merged with the user's file (network key
    ``toolbox_info_file``, else ``AGENT_TOOLBOX_INFO_FILE``), and that file's name."""
    configured = document.get("toolbox_info_file")
    if configured is not None and not isinstance(configured, str):
        raise NetworkLoadError(file, "toolbox_info_file", f"must be a file name, not {type_name(configured)}")
    name = configured or process_env().get(TOOLBOX_ENV, "").strip() or None
    if name is None:
        return _deep_copy(DEFAULT_TOOLBOX), None
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        # Relative to the working directory, as neuro-san reads it; else beside the network.
        beside = Path(file).parent / path
        path = beside if beside.exists() else path
    user = read_document(path)
    if not isinstance(user, dict):
        raise NetworkLoadError(str(path), "", f"a toolbox info file must be a dict of tools, not {type_name(user)}")
    return _deep_copy(deep_merge(DEFAULT_TOOLBOX, user)), str(path)


def _coded_tool_agent(
    raw: dict[str, Any],
    key_path: str,
    is_front_man: bool,
    entries: Mapping[str, Any],
    user_file: str | None,
    file: str,
) -> dict[str, Any]:
    tool = raw["toolbox"]
    where = f"{key_path}.toolbox"
    if is_front_man:
        raise NetworkLoadError(file, where, "the front man (first agent) cannot be a toolbox tool")
    if not isinstance(tool, str) or not tool:
        raise NetworkLoadError(file, where, f"must name a toolbox entry, not {tool!r}")
    for key in raw:
        if key not in TOOLBOX_AGENT_KEYS:
            raise NetworkLoadError(
                file, f"{key_path}.{key}", "not allowed on a toolbox tool: its toolbox entry defines the tool"
            )
    toolbox_name = f"{_DEFAULT_NAME} or {user_file}" if user_file else _DEFAULT_NAME
    entry = entries.get(tool)
    if entry is None:
        if tool in REMOVED_ENTRIES:
            raise NetworkLoadError(
                file,
                where,
                f"tool {tool!r} was removed from neuro-san's default toolbox (it was a LangChain "
                "requests tool); this server runs no LangChain tools: write it as a coded tool",
            )
        raise NetworkLoadError(file, where, f"tool {tool!r} is not defined in {toolbox_name}")
    entry_file = user_file if user_file and tool not in DEFAULT_TOOLBOX else _DEFAULT_NAME
    if not isinstance(entry, dict):
        raise NetworkLoadError(file, where, f"toolbox entry {tool!r} in {entry_file} must be a dict")
    class_name = entry.get("class")
    if not isinstance(class_name, str) or not class_name:
        raise NetworkLoadError(file, where, f"toolbox entry {tool!r} in {entry_file} has no 'class'")
    if "description" not in entry:
        raise NetworkLoadError(
            file,
            where,
            f"toolbox entry {tool!r} in {entry_file} names a LangChain tool or toolkit ({class_name}); "
            "this server runs no LangChain tools. Give the entry a 'description' and 'parameters' and a "
            "CodedTool class to serve it as a coded tool",
        )
    description, parameters = entry.get("description"), entry.get("parameters")
    if not isinstance(description, str):
        raise NetworkLoadError(file, where, f"toolbox entry {tool!r} in {entry_file}: 'description' must be a string")
    if parameters is not None and not isinstance(parameters, dict):
        raise NetworkLoadError(file, where, f"toolbox entry {tool!r} in {entry_file}: 'parameters' must be a dict")
    entry_args = entry.get("args") or {}
    agent_args = raw.get("args") or {}
    if not isinstance(entry_args, dict) or not isinstance(agent_args, dict):
        raise NetworkLoadError(file, f"{key_path}.args", "toolbox and agent 'args' must be dicts")
    agent: dict[str, Any] = {
        **({"name": raw["name"]} if "name" in raw else {}),
        "class": NATIVE_CLASSES.get(class_name, class_name),
        "function": {"description": description, **({"parameters": parameters} if parameters else {})},
        # The agent's args add to and override the entry's, as neuro-san documents.
        "args": _deep_copy(deep_merge(entry_args, agent_args)),
    }
    display_as = raw.get("display_as", entry.get("display_as"))
    if display_as is not None:
        agent["display_as"] = display_as
    for key in ("allow", "metadata", "verbose"):
        if key in raw:
            agent[key] = raw[key]
    return agent


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_copy(item) for item in value]
    return value
