"""neuro-san 0.7.15 network keys that change behaviour and that this server does not
implement: refused when the network loads, never accepted and ignored.

Each refusal names the key path and says what to do instead. Keys that neuro-san reads
but that change nothing a client can observe (``verbose``: server-side logging;
``allow.to_tracing``: this server never puts sly_data in traces; ``structure_formats``
other than ``json``: neuro-san skips them too) are accepted. The
full table, with what is implemented, is docs/compatibility.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError


def refuse_unsupported_keys(document: Mapping[str, Any], file: str) -> None:
    """Raise :class:`NetworkLoadError` for the first behaviour-changing key this server
    does not implement, at the top level or in any agent."""
    _error_handling(document, "", file)
    if document.get("llm_info_file") is not None:
        # The server-wide table (AGENT_LLM_INFO_FILE) is supported; one per network is not,
        # because models are resolved and cached server-wide.
        raise NetworkLoadError(
            file,
            "llm_info_file",
            "a per-network LLM info file is not supported: put its entries in the server's AGENT_LLM_INFO_FILE",
        )
    for index, agent in enumerate(document.get("tools") or ()):
        if isinstance(agent, dict):
            _agent(agent, f"tools[{index}]", file)


def _agent(agent: Mapping[str, Any], key_path: str, file: str) -> None:
    _error_handling(agent, f"{key_path}.", file)
    for key in ("max_execution_seconds", "max_attempts"):
        if agent.get(key) is not None:
            raise NetworkLoadError(
                file, f"{key_path}.{key}", f"a per-agent {key} is not supported: set it at the top level of the network"
            )
    function = agent.get("function")
    if isinstance(function, dict):
        kind = invocation_kind(function)
        if kind not in ("chatbot", "event"):
            raise NetworkLoadError(
                file, f"{key_path}.function.invocation", f"invocation {kind!r} is unknown: use 'chatbot' or 'event'"
            )
    allow = agent.get("allow")
    if isinstance(allow, dict) and allow.get("reservations") and "class" not in agent:
        raise NetworkLoadError(
            file, f"{key_path}.allow.reservations", "reservations are for coded tools (agents with a 'class')"
        )


def invocation_kind(function: Mapping[str, Any]) -> Any:
    """``function.invocation`` (a string, or ``{"invocation_type": …}``); default chatbot."""
    invocation = function.get("invocation")
    kind = invocation.get("invocation_type") if isinstance(invocation, Mapping) else invocation
    return "chatbot" if kind is None else kind


#: neuro-san's two error formatters (``ErrorFormatterFactory``), by lower-cased name.
ERROR_FORMATTERS = ("string", "json")


def _error_handling(config: Mapping[str, Any], prefix: str, file: str) -> None:
    formatter = config.get("error_formatter")
    if formatter is not None and (not isinstance(formatter, str) or formatter.lower() not in ERROR_FORMATTERS):
        # neuro-san quietly falls back to 'string' for any other name; a typo should not.
        raise NetworkLoadError(
            file, f"{prefix}error_formatter", f"error_formatter must be 'string' or 'json', not {formatter!r}"
        )
    fragments = config.get("error_fragments")
    if fragments is not None and (
        not isinstance(fragments, list) or not all(isinstance(item, str) and item for item in fragments)
    ):
        raise NetworkLoadError(
            file, f"{prefix}error_fragments", f"must be a list of non-empty strings, not {fragments!r}"
        )


def error_handling(agent: Mapping[str, Any], network: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's ``error_formatter`` and ``error_fragments`` (its own, else the
    network's, as neuro-san's defaults filter hands top-level values down)."""
    formatter = agent.get("error_formatter")
    if formatter is None:
        formatter = network.get("error_formatter")
    fragments = agent.get("error_fragments")
    if fragments is None:
        fragments = network.get("error_fragments")
    return {
        "error_formatter": str(formatter or "string").lower(),
        "error_fragments": tuple(fragments or ()),
    }
