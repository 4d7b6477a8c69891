"""Manifests: which network files a server serves, and under which agent names.

A manifest (HOCON, YAML or JSON) maps paths relative to its own folder to ``true``,
``false`` or ``{serve: bool, public: bool, mcp: …, periodic: …}`` (``mcp``: see
:mod:`neuro_san.network.served_as_mcp`; ``periodic``: scheduled chats, ``neuro_san.periodic``).
The agent name is the path without its extension, sub-folders included:
``deep/math_guy.hocon`` serves ``deep/math_guy``.

``AGENT_MANIFEST_FILE`` may name several manifests joined with ``:``; a later manifest's
entry replaces an earlier one of the same name.

A bad entry is an error of its own and does not spoil the rest of the manifest.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.network.files import SUPPORTED_SUFFIXES, read_document
from neuro_san.network.served_as_mcp import McpSetting, parse_mcp_setting
from neuro_san.periodic.config import Interaction, parse_periodic

logger = logging.getLogger(__name__)

#: Keys of a manifest entry's dict. Only serve and public mean something here.
OPTION_KEYS = frozenset({"serve", "public", "mcp", "periodic"})


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One network listed in a manifest."""

    #: The agent name clients use (``deep/math_guy``).
    name: str
    #: The network file.
    path: Path
    serve: bool
    #: Listed by Concierge.
    public: bool
    #: The manifest that listed it.
    manifest: Path
    #: Served as an MCP tool (``mcp`` key; ``true`` entries are).
    mcp: McpSetting = McpSetting()
    #: Scheduled chats (``periodic``), run by ``neuro_san.periodic.scheduler``.
    periodic: tuple[Interaction, ...] = ()


@dataclass(slots=True)
class Manifest:
    """A parsed manifest: its entries by agent name, and its bad entries."""

    path: Path
    entries: dict[str, ManifestEntry] = field(default_factory=dict)
    errors: list[NetworkLoadError] = field(default_factory=list)


def network_name(relative_path: str) -> str:
    """The agent name of a manifest key: the path without its extension."""
    return str(PurePosixPath(relative_path).with_suffix(""))


def read_manifest(path: Path) -> Manifest:
    """Read one manifest. Raises :class:`NetworkLoadError` when the whole file is
    unusable (missing, syntax error, not a dict); bad entries land in ``errors``.

    Blocking file I/O: call it off the event loop.
    """
    return parse_manifest(read_document(path), path)


def parse_manifest(document: Any, path: Path) -> Manifest:
    """Build a :class:`Manifest` from already-parsed data read from ``path``."""
    file = str(path)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise NetworkLoadError(
            file, "", f"a manifest must be a dict of file paths, not a {type_name(document)}"
        )
    manifest = Manifest(path=path)
    for key, value in flatten_manifest(document):
        try:
            entry = _entry(key, value, path)
        except NetworkLoadError as error:
            manifest.errors.append(error)
            continue
        earlier = manifest.entries.get(entry.name)
        if earlier is not None:
            manifest.errors.append(
                NetworkLoadError(
                    file, key, f"agent name {entry.name!r} is already given by {earlier.path.name}"
                )
            )
            continue
        manifest.entries[entry.name] = entry
    return manifest


def flatten_manifest(document: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """The (path, value) pairs of a manifest.

    HOCON splits an unquoted key on dots (``hello.hocon = true`` reads as
    ``{hello: {hocon: true}}``); a dict that holds no option key is such a split path,
    so its keys are joined back.
    """
    pairs: list[tuple[str, Any]] = []
    for key, value in document.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value and not OPTION_KEYS.intersection(value):
            pairs.extend(flatten_manifest(value, full))
        else:
            pairs.append((full, value))
    return pairs


def looks_like_manifest(document: Any) -> bool:
    """True when every value is a bool or an options dict, as in a manifest."""
    if not isinstance(document, dict) or not document or "tools" in document:
        return False
    return all(
        isinstance(value, bool) or (isinstance(value, dict) and OPTION_KEYS.issuperset(value))
        for _, value in flatten_manifest(document)
    )


def merge_manifests(manifests: Iterable[Manifest]) -> dict[str, ManifestEntry]:
    """Entries of several manifests by name; later manifests win."""
    merged: dict[str, ManifestEntry] = {}
    for manifest in manifests:
        merged.update(manifest.entries)
    return merged


def _entry(key: str, value: Any, manifest_path: Path) -> ManifestEntry:
    file = str(manifest_path)
    normalized = posixpath.normpath(key.replace("\\", "/"))
    if normalized.startswith("/") or normalized == ".." or normalized.startswith("../"):
        raise NetworkLoadError(
            file, key, "a network path must be relative to the manifest's folder, inside it"
        )
    suffix = PurePosixPath(normalized).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise NetworkLoadError(
            file, key, "unsupported network file type: use .hocon, .yaml, .yml or .json"
        )
    serve, public = _options(key, value, file)
    return ManifestEntry(
        name=network_name(normalized),
        path=manifest_path.parent / normalized,
        serve=serve,
        public=public,
        manifest=manifest_path,
        mcp=_mcp_setting(key, value, file),
        periodic=parse_periodic(value.get("periodic"), file, f"{key}.periodic") if isinstance(value, dict) else (),
    )


def _mcp_setting(key: str, value: Any, file: str) -> McpSetting:
    if isinstance(value, bool):
        return McpSetting(enabled=value)
    try:
        return parse_mcp_setting(value.get("mcp"))
    except ValueError as error:
        raise NetworkLoadError(file, f"{key}.mcp", str(error)) from None


def _options(key: str, value: Any, file: str) -> tuple[bool, bool]:
    if isinstance(value, bool):
        return value, value
    if not isinstance(value, dict):
        raise NetworkLoadError(
            file, key, f"must be true, false or a dict with serve/public, not {value!r}"
        )
    flags: dict[str, bool] = {}
    for option in ("serve", "public"):
        flag = value.get(option, True)
        if not isinstance(flag, bool):
            raise NetworkLoadError(file, f"{key}.{option}", f"must be true or false, not {flag!r}")
        flags[option] = flag
    for option in value:
        if option not in ("serve", "public", "mcp"):
            logger.debug("%s: %s.%s is not used by this server; ignored", file, key, option)
    return flags["serve"], flags["serve"] and flags["public"]
