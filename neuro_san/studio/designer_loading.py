"""Loading a network to edit, for neuro-san-studio's ``AgentNetworkDefinitionMiddleware``.

A designer client may name the network to edit instead of sending its definition:

- ``agent_network_hocon_file``: a ``.hocon`` or ``.json`` network file inside a registries
  folder (the folder of any ``AGENT_MANIFEST_FILE`` entry, else ``registries/`` in the
  working directory). Found as studio finds it: an absolute path; else a path relative to
  the working directory that names an existing file inside a registries folder; else a
  path relative to the first manifest's folder. It is parsed with this server's parser, its
  includes resolved as the network loader resolves them; the network's name is the file's
  stem.
- ``agent_reservations``: the last entry's ``reservation_id`` names a temporary network. Studio
  reads the deployed network from the S3 bucket neuro-san's reservation storage writes; here
  the reservation lives in this server's :class:`ReservationStore`, so its deployed network
  is read from there. The name is the id without its trailing ``-<uuid>``.

Either way the network's ``tools`` list becomes studio's definition (``{agent: {instructions,
description, tools}}``) and its ``metadata`` block, without the keys reservation storage owns,
goes to ``sly_data["agent_network_metadata"]``. Failures are answered with studio's texts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.files import read_document
from neuro_san.reservations.store import ReservationStore
from neuro_san.settings import process_env
from neuro_san.studio.designer_files import DEFAULT_REGISTRIES

log = logging.getLogger(__name__)

HOCON_FILE_KEY = "agent_network_hocon_file"
RESERVATIONS_KEY = "agent_reservations"
RESERVATION_ID = "reservation_id"
METADATA_KEY = "agent_network_metadata"

SUFFIXES = (".hocon", ".json")
#: Studio's one answer for every file that cannot be used (missing, outside the registries, …).
UNAVAILABLE = (
    "Error: Agent network config file is unavailable or not permitted. "
    "It must be an existing .hocon or .json file inside the registries directory."
)
#: Keys neuro-san's reservation storage adds to a stored network's metadata.
_STORAGE_KEYS = frozenset({"reservation", "stored_at"})
_UUID_SUFFIX = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)


class LoadError(Exception):
    """The network could not be loaded; ``str(error)`` is the answer for the client."""


#: A loaded network: its definition, its name, and its metadata block.
Loaded = tuple[dict[str, Any], str, dict[str, Any]]


def _manifest_dirs() -> list[str]:
    parts = [part for part in process_env().get("AGENT_MANIFEST_FILE", "").split(os.pathsep) if part.strip()]
    return [os.path.dirname(part) or "." for part in parts]


def _inside_registries(candidate: str) -> str:
    """The canonical path of ``candidate``; PermissionError when it is outside every registries folder."""
    canonical = os.path.realpath(candidate)
    roots = _manifest_dirs() or [DEFAULT_REGISTRIES]
    for root in roots:
        if Path(canonical).is_relative_to(os.path.realpath(root)):
            return canonical
    raise PermissionError(f"{canonical} is outside the registries folders {roots}")


def _in_registries(relative: str) -> Path:
    """``relative`` to the first manifest's folder (``registries`` without one), kept inside."""
    dirs = _manifest_dirs()
    return Path(_inside_registries(os.path.join(dirs[0] if dirs else DEFAULT_REGISTRIES, relative)))


def resolve_file(reference: Any) -> Path:
    """Where the file a client named is, by studio's rules (see the module text). Blocking."""
    if not isinstance(reference, str) or not reference.strip():
        raise LoadError(
            f"Error: Invalid network_hocon_file value: {type(reference).__name__} (expected non-empty string)."
        )
    normalized = reference.strip().replace("\\", "/")
    try:
        if Path(normalized).is_absolute():
            return Path(_inside_registries(normalized))
        trimmed = normalized.lstrip("/")  # "/x" on Windows: kept under the registries
        try:
            in_working_directory = Path(trimmed).is_file()
        except (OSError, ValueError):
            in_working_directory = False
        if in_working_directory:
            try:
                return Path(_inside_registries(trimmed))
            except (OSError, ValueError):
                pass  # a stray file in the working directory: look in the registries instead
        return _in_registries(trimmed)
    except (OSError, ValueError) as error:
        log.error("designer: rejected agent network config path %r: %s", reference, error)
        raise LoadError(UNAVAILABLE) from None


def _read_file(reference: Any) -> tuple[Mapping[str, Any], str]:
    """The parsed file and the name it gives the network. Blocking I/O."""
    path = resolve_file(reference)
    if not path.name.endswith(SUFFIXES) or not path.is_file():
        log.error("designer: agent network config file %s is missing or not .hocon/.json", path)
        raise LoadError(UNAVAILABLE)
    try:
        config = read_document(path)
    except NetworkLoadError as error:
        if error.reason.startswith("cannot read file"):
            raise LoadError(UNAVAILABLE) from None
        detail = str(error).replace(str(path), str(reference))
        raise LoadError(f"Error: Failed to parse agent network config file '{reference}'. {detail}") from None
    if not isinstance(config, Mapping):
        raise LoadError(f"Error: Failed to parse agent network config file '{reference}'. The top level is not a dict.")
    return config, Path(str(reference)).stem


async def load_file(reference: Any) -> Loaded:
    config, name = await asyncio.to_thread(_read_file, reference)
    definition, metadata = config_to_definition(config, str(reference))
    return definition, name, metadata


def reservation_id(reservations: Any) -> str | None:
    """The ``reservation_id`` of the last entry (studio's convention: the top-level handle),
    or None when there is none; a present id that is not a string is an error."""
    if not reservations or not isinstance(reservations, list):
        return None
    last = reservations[-1]
    if not isinstance(last, Mapping) or RESERVATION_ID not in last:
        log.warning("designer: the last %s entry holds no %s: %r", RESERVATIONS_KEY, RESERVATION_ID, last)
        return None
    found = last[RESERVATION_ID]
    if not found:
        return None  # studio: an empty id loads nothing
    if not isinstance(found, str):
        raise LoadError(
            f"Error: Invalid '{RESERVATION_ID}' value: {type(found).__name__} (expected a non-empty string)."
        )
    return found


def name_from_reservation_id(found: str) -> str:
    """The prefix the reservation was made with: the id without its ``-<uuid4>`` tail."""
    match = _UUID_SUFFIX.search(found)
    return found[: match.start()] if match else found


async def load_reservation(found: str, store: ReservationStore | None) -> Loaded:
    document = store.document(found) if store is not None else None
    if document is None and store is not None and (spec := store.get(found)) is not None and spec.source:
        # A copy of a served network (NetworkCopyMiddleware): its network is the served file.
        try:
            document = await asyncio.to_thread(read_document, Path(spec.source))
        except NetworkLoadError as error:
            raise LoadError(f"Error: Reservation '{found}' on this server has unexpected shape. {error}") from None
    if document is None:
        raise LoadError(f"Error: Reservation '{found}' not found on this server (unknown or expired).")
    if not isinstance(document, Mapping):
        raise LoadError(f"Error: Reservation '{found}' on this server has unexpected shape. Not a dict.")
    definition, metadata = config_to_definition(document, found)
    return definition, name_from_reservation_id(found), metadata


def config_to_definition(config: Mapping[str, Any], source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Studio's definition of a network's ``tools`` list, and its metadata block."""
    agents = config.get("tools")
    if not isinstance(agents, list):
        problem = "No field 'tools' found" if agents is None else "The 'tools' field is not a list"
        raise LoadError(f"Error: {problem} in config from {source}.")
    definition: dict[str, Any] = {}
    for agent in agents:
        parsed = _agent(agent, source)
        if parsed is not None:
            definition[parsed[0]] = parsed[1]
    if not definition:
        raise LoadError(
            f"Error: No usable agent found in the 'tools' list in config from {source}. "
            "The list is empty or every entry was skipped; see the preceding warnings for the reason per entry."
        )
    return definition, metadata_block(config.get("metadata"))


def _agent(agent: Any, source: str) -> tuple[str, dict[str, Any]] | None:
    """One ``tools`` entry as studio keeps it: instructions, description, tools; None to skip it."""
    if not isinstance(agent, Mapping):
        log.warning("designer: skipping a 'tools' entry that is not a dict in %s: %r", source, agent)
        return None
    name = agent.get("name")
    if not isinstance(name, str) or not name:
        log.warning("designer: skipping a 'tools' entry without a valid name in %s: %r", source, agent)
        return None
    entry: dict[str, Any] = {}
    instructions = agent.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            log.warning("designer: skipping agent %s: non-string 'instructions' in %s", name, source)
            return None
        if instructions.strip():
            entry["instructions"] = instructions.strip()
        # An agent with instructions always has a description key (studio tells them from toolbox agents so).
        entry["description"] = ""
    function = agent.get("function")
    description = function.get("description") if isinstance(function, Mapping) else None
    if description is not None:
        if not isinstance(description, str):
            log.warning("designer: skipping agent %s: non-string 'description' in %s", name, source)
            return None
        if description.strip():
            entry["description"] = description.strip()
    tools = agent.get("tools")
    if tools:
        entry["tools"] = tools
    return name, entry


def metadata_block(candidate: Any) -> dict[str, Any]:
    """A network's metadata block as the client gets it: without reservation storage's keys
    and without null values (a file cannot keep them)."""
    if not isinstance(candidate, Mapping):
        return {}
    return {
        key: _without_nulls(value) for key, value in candidate.items() if key not in _STORAGE_KEYS and value is not None
    }


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value
