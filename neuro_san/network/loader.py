"""Reading one agent-network file (HOCON, YAML or JSON) into a :class:`NetworkSpec`.

The steps: parse the file into plain data (``files``), apply ``commondefs``
(``commondefs``), then validate and build the spec (``builder``), then the checks that
need more than the file: each LLM agent's model (``neuro_san.llm.checks``) and, when the
coded-tool roots are known, each coded tool's class (``coded_refs``). Every problem is a
:class:`NetworkLoadError`, ``file: key path: reason``; the faults of one file are
collected and raised together (:class:`NetworkFaults`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkFaults, NetworkLoadError, type_name
from neuro_san.llm.checks import llm_config_problem  # the LLM layer's own rules
from neuro_san.network.builder import build_network
from neuro_san.network.coded_refs import coded_tool_problem
from neuro_san.network.commondefs import apply_commondefs
from neuro_san.network.files import SUPPORTED_SUFFIXES, read_document
from neuro_san.network.spec import NetworkSpec

__all__ = ("SUPPORTED_SUFFIXES", "NetworkLoadError", "inspect_network", "load_network")


def load_network(
    path: Path, name: str, public: bool = True, tool_roots: Sequence[Path] | None = None
) -> NetworkSpec:
    """Load, validate and build the network in ``path``, served as ``name``.

    ``tool_roots``: where coded tools are looked for (AGENT_TOOL_PATH and the bundled
    ones); None leaves their classes unchecked. Blocking file I/O: call it off the event
    loop (``asyncio.to_thread``).
    """
    spec, faults = inspect_network(path, name, public, tool_roots)
    if faults:
        raise NetworkFaults(faults)
    assert spec is not None  # no faults: built
    return spec


def inspect_network(
    path: Path, name: str, public: bool = True, tool_roots: Sequence[Path] | None = None
) -> tuple[NetworkSpec | None, list[NetworkLoadError]]:
    """Every fault of the network in ``path``, and the spec of what could be built
    (None when the file could not be read that far; never served with faults)."""
    file = str(path)
    try:
        document = read_document(path)
        if not isinstance(document, dict):
            kind = "empty" if document is None else f"a {type_name(document)}"
            raise NetworkLoadError(file, "", f"the top level must be a dict, but the file is {kind}")
        document = apply_commondefs(document, file)
        faults: list[NetworkLoadError] = []
        spec = build_network(document, file, name, public, faults)
    except NetworkFaults as error:
        return None, list(error.faults)
    except NetworkLoadError as error:
        return None, [error]
    positions = agent_positions(document)
    faults.extend(llm_faults(spec, file, positions))
    if tool_roots is not None:
        faults.extend(coded_tool_faults(spec, file, tool_roots, positions))
    return spec, faults


def agent_positions(document: Mapping[str, Any]) -> dict[str, int]:
    """Each agent's index in the file's ``tools`` list, by name."""
    raw_agents = document.get("tools")
    if not isinstance(raw_agents, list):
        return {}
    return {
        raw["name"]: index
        for index, raw in enumerate(raw_agents)
        if isinstance(raw, dict) and isinstance(raw.get("name"), str)
    }


def unserved_network_faults(
    spec: NetworkSpec, served: Collection[str], positions: Mapping[str, int] | None = None
) -> list[NetworkLoadError]:
    """A fault per ``/name`` tool whose network is not among ``served``: its first call
    would fail ("not served here")."""
    faults = []
    for index, agent in enumerate(spec.agents.values()):
        for tool in agent.tools:
            if tool.startswith("/") and tool[1:] not in served:
                faults.append(
                    NetworkLoadError(
                        spec.source, f"{_agent_path(index, positions, agent.name)}.tools",
                        f"network {tool!r} is not served by the manifests given (list it there, served)",
                    )
                )
    return faults


def llm_faults(spec: NetworkSpec, file: str, positions: Mapping[str, int] | None = None) -> list[NetworkLoadError]:
    """A fault per LLM agent whose model this server cannot serve."""
    faults = []
    for index, agent in enumerate(spec.agents.values()):
        if agent.kind != "llm_agent":
            continue
        problem = llm_config_problem(agent.llm_config)
        if problem:
            faults.append(NetworkLoadError(file, f"{_agent_path(index, positions, agent.name)}.llm_config", problem))
    return faults


def coded_tool_faults(
    spec: NetworkSpec, file: str, roots: Sequence[Path], positions: Mapping[str, int] | None = None
) -> list[NetworkLoadError]:
    """A fault per coded tool whose class is not found on ``roots``."""
    faults = []
    for index, agent in enumerate(spec.agents.values()):
        if agent.class_name is None:
            continue
        problem = coded_tool_problem(roots, spec.name, agent.class_name)
        if problem:
            faults.append(NetworkLoadError(file, f"{_agent_path(index, positions, agent.name)}.class", problem))
    return faults


def _agent_path(index: int, positions: Mapping[str, int] | None, name: str) -> str:
    """``tools[i]``: the agent's place in the file (``positions``, when agents that failed
    to build are missing from the spec), else its place among the spec's agents."""
    return f"tools[{positions.get(name, index) if positions else index}]"
