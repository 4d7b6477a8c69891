"""Reading one agent-network file (HOCON, YAML or JSON) into a :class:`NetworkSpec`.

The steps: parse the file into plain data (``files``), apply ``commondefs``
(``commondefs``), then validate and build the spec (``builder``). Each step reports
problems as :class:`NetworkLoadError`, ``file: key path: reason``.
"""

from __future__ import annotations

from pathlib import Path

from neuro_san.llm.checks import llm_config_problem  # the LLM layer's own rules
from neuro_san.network.builder import build_network
from neuro_san.network.commondefs import apply_commondefs
from neuro_san.network.errors import NetworkLoadError, type_name
from neuro_san.network.files import SUPPORTED_SUFFIXES, read_document
from neuro_san.network.spec import NetworkSpec

__all__ = ("SUPPORTED_SUFFIXES", "NetworkLoadError", "load_network")


def load_network(path: Path, name: str, public: bool = True) -> NetworkSpec:
    """Load, validate and build the network in ``path``, served as ``name``.

    Blocking file I/O: call it off the event loop (``asyncio.to_thread``).
    """
    file = str(path)
    document = read_document(path)
    if not isinstance(document, dict):
        kind = "empty" if document is None else f"a {type_name(document)}"
        raise NetworkLoadError(file, "", f"the top level must be a dict, but the file is {kind}")
    document = apply_commondefs(document, file)
    spec = build_network(document, file, name, public)
    refuse_unservable_llms(spec, file)
    return spec


def refuse_unservable_llms(spec: NetworkSpec, file: str) -> None:
    """NetworkLoadError for an LLM agent whose provider this server cannot serve."""
    for index, agent in enumerate(spec.agents.values()):
        if agent.kind != "llm_agent":
            continue
        problem = llm_config_problem(agent.llm_config)
        if problem:
            raise NetworkLoadError(file, f"tools[{index}].llm_config", problem)
