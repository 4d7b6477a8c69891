"""A2A agent references in a network's ``tools`` list (the client is
:mod:`neuro_san.runtime.a2a_agents`).

The string form is ``"a2a+https://host/path"``. The dict form adds HTTP headers for the
peer (an API key)::

    {"a2a": "https://host/path", "headers": {"Authorization": "Bearer ${PEER_KEY}"}}

``${NAME}`` is taken from the environment when the network is loaded (a missing one is
refused then). The dict becomes a string reference labelled with its header set
(``a2a+https://host/path#headers-1``, the label is never sent); the headers are kept
here, by reference, for the client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.settings import process_env

PREFIX = "a2a+"

_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: ref → extra headers, from the dict form of the references of loaded networks.
_HEADERS: dict[str, dict[str, str]] = {}


def is_a2a_ref(ref: str) -> bool:
    return ref[: len(PREFIX)].lower() == PREFIX and "://" in ref


def a2a_url(ref: str) -> str:
    """``a2a+https://host/path`` → ``https://host/path``; refused unless http(s)."""
    url = ref[len(PREFIX):].split("#", 1)[0]
    if not re.match(r"(?i)^https?://[^/\s]+", url):
        raise ConfigurationError(f"A2A agent {ref!r}: expected a2a+http(s)://host[:port]/path")
    return url


def _expand(value: str, where: str) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        env = process_env()
        if name not in env:
            raise ConfigurationError(f"{where}: environment variable {name} is not set")
        return env[name]

    return _ENV_VAR.sub(substitute, value)


def ref_from_dict(raw: Mapping[str, Any], where: str) -> str:
    """The dict form ``{"a2a": url, "headers": {...}}`` → its reference, headers noted."""
    unknown = set(raw) - {"a2a", "headers"}
    if unknown:
        raise ConfigurationError(f"{where}: unknown keys {sorted(unknown)} in an A2A tool (a2a, headers)")
    url = raw.get("a2a")
    if not isinstance(url, str) or not url:
        raise ConfigurationError(f"{where}.a2a: must be the A2A agent's URL")
    ref = (url if is_a2a_ref(url) else PREFIX + url).split("#", 1)[0]
    a2a_url(ref)
    headers = raw.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigurationError(f"{where}.headers: must map header names to strings")
    expanded = {k: _expand(v, f"{where}.headers.{k}") for k, v in headers.items()}
    if not expanded:
        return ref
    # Each distinct header set gets its own reference (``…#headers-2``), so the string
    # form of the same URL elsewhere never borrows them; no secret is in the reference.
    same_url = [known for known in _HEADERS if known.split("#", 1)[0] == ref]
    for known in same_url:
        if _HEADERS[known] == expanded:
            return known
    labelled = f"{ref}#headers-{len(same_url) + 1}"
    _HEADERS[labelled] = expanded
    return labelled


def a2a_headers(ref: str) -> dict[str, str]:
    """The extra headers the dict form gave ``ref`` (none for the string form)."""
    return dict(_HEADERS.get(ref, {}))
