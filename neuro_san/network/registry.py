"""The registry: every served network by name, kept up to date from the manifests.

Reads (:meth:`NetworkRegistry.get`, :meth:`NetworkRegistry.networks`) take no lock: a
reload builds a new name→spec mapping and swaps the reference in one assignment, and a
request keeps the spec it started with.

A broken network file or manifest never stops the others: it is logged (file, key path,
reason) and kept in :attr:`NetworkRegistry.errors`. On hot reload a broken edit keeps the
last good version serving; a removed file removes its network.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

import neuro_san
from neuro_san.core.load_errors import NetworkLoadError, faults_of
from neuro_san.network.files import HOCON_SUFFIXES
from neuro_san.network.includes import included_files
from neuro_san.network.loader import load_network, unserved_network_faults
from neuro_san.network.manifest import Manifest, ManifestEntry, merge_manifests, read_manifest
from neuro_san.network.spec import NetworkSpec
from neuro_san.periodic.config import Interaction

logger = logging.getLogger(__name__)

#: Called with the names of the networks that were added, changed or removed.
ChangeListener = Callable[[set[str]], None]

#: What identifies a file's version without reading it: (mtime in ns, size, inode), and
#: the same of each file it includes.
Fingerprint = tuple[int, ...]


def default_manifest_path() -> Path:
    """The manifest of the example networks shipped in the package."""
    return Path(neuro_san.__file__).parent / "registries" / "manifest.hocon"


def manifest_paths_from_env(value: str | None) -> list[Path]:
    """The manifests named by ``AGENT_MANIFEST_FILE`` (``:``-separated), or the
    packaged one when it is unset or empty."""
    paths = [Path(part.strip()) for part in (value or "").split(":") if part.strip()]
    return paths or [default_manifest_path()]


@dataclass(slots=True)
class ReloadResult:
    """What one pass over the manifests and network files changed."""

    added: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    #: Every problem found in this pass (also the ones already reported before).
    errors: list[NetworkLoadError] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return self.added | self.changed | self.removed


@dataclass(slots=True)
class _Loaded:
    """The last attempt at one network: what it was loaded from and the outcome."""

    entry: ManifestEntry
    fingerprint: Fingerprint
    #: The last good spec (kept serving when a later edit is broken).
    spec: NetworkSpec | None
    error: NetworkLoadError | None


class NetworkRegistry:
    """The networks served, read from one or more manifests (a ``NetworkSource``)."""

    def __init__(self, manifest_paths: Sequence[Path], tool_roots: Sequence[Path] | None = None) -> None:
        self.manifest_paths = [Path(path) for path in manifest_paths]
        #: Where coded tools are found; None leaves their classes unchecked at load.
        self.tool_roots = None if tool_roots is None else [Path(root) for root in tool_roots]
        self._specs: Mapping[str, NetworkSpec] = MappingProxyType({})
        #: Problems found by the last pass: broken manifests and network files.
        self.errors: list[NetworkLoadError] = []
        #: Called after each pass that changed something (on the caller's thread).
        self.on_change: list[ChangeListener] = []
        self._manifests: dict[Path, tuple[Fingerprint, Manifest]] = {}
        self._loaded: dict[str, _Loaded] = {}
        self._reported: set[NetworkLoadError] = set()
        self._warned: set[NetworkLoadError] = set()
        # Only one pass at a time; readers never take it.
        self._reload_lock = threading.Lock()

    @classmethod
    def from_manifests(
        cls, paths: Iterable[Path | str], tool_roots: Sequence[Path] | None = None
    ) -> NetworkRegistry:
        """Build a registry and load everything once (blocking file I/O)."""
        registry = cls([Path(path) for path in paths], tool_roots)
        registry.reload()
        return registry

    # NetworkSource ---------------------------------------------------------------------

    def get(self, name: str) -> NetworkSpec | None:
        return self._specs.get(name)

    def networks(self) -> Mapping[str, NetworkSpec]:
        return self._specs

    def periodic(self) -> dict[str, tuple[Interaction, ...]]:
        """The scheduled interactions (manifest ``periodic``) of the served networks."""
        served = self._specs
        return {name: one.entry.periodic for name, one in self._loaded.items() if name in served and one.entry.periodic}

    # Loading ---------------------------------------------------------------------------

    def reload(self) -> ReloadResult:
        """Re-read what changed on disk, swap the served networks and tell listeners.

        Blocking file I/O; :meth:`watch` runs the reading part in a worker thread.
        """
        specs, errors = self._scan()
        return self._publish(specs, errors)

    async def watch(self, period_seconds: float) -> None:
        """Reload every ``period_seconds`` until cancelled (run it as a task)."""
        if period_seconds <= 0:
            raise ValueError(f"period_seconds must be positive, not {period_seconds}")
        while True:
            await asyncio.sleep(period_seconds)
            try:
                specs, errors = await asyncio.to_thread(self._scan)
                self._publish(specs, errors)
            except Exception:
                # A bug in one pass must not end hot reload for the life of the server.
                logger.exception("reloading the agent networks failed; will retry")

    def _scan(self) -> tuple[dict[str, NetworkSpec], list[NetworkLoadError]]:
        """Read the manifests and the changed network files; build the new mapping."""
        with self._reload_lock:
            errors: list[NetworkLoadError] = []
            entries = merge_manifests(self._read_manifests(errors))
            served = {name for name, entry in entries.items() if entry.serve}
            specs: dict[str, NetworkSpec] = {}
            loaded: dict[str, _Loaded] = {}
            for name, entry in entries.items():
                if not entry.serve:
                    continue
                state = self._load(entry, self._loaded.get(name))
                if state is None:
                    errors.append(NetworkLoadError(str(entry.path), "", "file not found"))
                    continue
                loaded[name] = state
                if state.error is not None:
                    errors.extend(faults_of(state.error))
                if state.spec is not None:
                    specs[name] = state.spec
                    # A `/name` tool of a network no manifest serves fails at its first call.
                    # Said now, once, but still served: refusing would make removing one
                    # network from a manifest take down every network naming it.
                    for fault in unserved_network_faults(state.spec, served):
                        if fault not in self._warned:
                            self._warned.add(fault)
                            logger.warning("agent network %s: %s; calls of that tool will fail", name, fault)
            self._loaded = loaded
            return specs, errors

    def _read_manifests(self, errors: list[NetworkLoadError]) -> list[Manifest]:
        manifests: list[Manifest] = []
        for path in self.manifest_paths:
            previous = self._manifests.get(path)
            fingerprint = _fingerprint(path)
            if previous is not None and previous[0] == fingerprint:
                manifest = previous[1]
            else:
                try:
                    manifest = read_manifest(path)
                except NetworkLoadError as error:
                    # Keep serving what the last good version of this manifest listed.
                    errors.append(error)
                    if previous is not None:
                        manifests.append(previous[1])
                    continue
                if fingerprint is not None:
                    self._manifests[path] = (fingerprint, manifest)
            errors.extend(manifest.errors)
            manifests.append(manifest)
        return manifests

    def _load(self, entry: ManifestEntry, previous: _Loaded | None) -> _Loaded | None:
        """Load ``entry`` unless nothing changed since ``previous``; None if the file is
        gone (its network is removed)."""
        fingerprint = _fingerprint(entry.path)
        if fingerprint is None:
            return None
        if previous is not None and previous.fingerprint == fingerprint:
            if previous.entry == entry:
                return previous
            if previous.entry.path == entry.path and previous.error is None:
                # Only the manifest's flags changed: no need to read the file again.
                spec = replace(previous.spec, public=entry.public, mcp=entry.mcp) if previous.spec else None
                return _Loaded(entry, fingerprint, spec, None)
        last_good = previous.spec if previous and previous.entry.path == entry.path else None
        try:
            spec = replace(load_network(entry.path, entry.name, entry.public, self.tool_roots), mcp=entry.mcp)
        except NetworkLoadError as error:
            return _Loaded(entry, fingerprint, last_good, error)
        return _Loaded(entry, fingerprint, spec, None)

    def _publish(
        self, specs: dict[str, NetworkSpec], errors: list[NetworkLoadError]
    ) -> ReloadResult:
        old = self._specs
        result = ReloadResult(
            added=set(specs) - set(old),
            removed=set(old) - set(specs),
            changed={name for name in set(specs) & set(old) if specs[name] is not old[name]},
            errors=errors,
        )
        self._specs = MappingProxyType(specs)
        self.errors = errors
        self._log(result)
        if result.names:
            for listener in list(self.on_change):
                try:
                    listener(set(result.names))
                except Exception:
                    logger.exception("an agent-network change listener failed")
        return result

    def _log(self, result: ReloadResult) -> None:
        current = set(result.errors)
        for error in result.errors:
            if error not in self._reported:
                serving = " (its last good version keeps serving)" if self._serving(error) else ""
                logger.error("agent network not loaded: %s%s", error, serving)
        self._reported = current
        for label, names in (("added", result.added), ("changed", result.changed)):
            if names:
                logger.info("agent networks %s: %s", label, ", ".join(sorted(names)))
        if result.removed:
            logger.info("agent networks removed: %s", ", ".join(sorted(result.removed)))

    def _serving(self, error: NetworkLoadError) -> bool:
        return any(
            state.error is not None and error in faults_of(state.error) and state.spec is not None
            for state in self._loaded.values()
        )


#: Per file: its own stat when last read, and the files it includes with their stats then.
_INCLUDES: dict[Path, tuple[tuple[int, int, int], list[tuple[Path, tuple[int, int, int] | None]]]] = {}


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


def _fingerprint(path: Path) -> Fingerprint | None:
    """The file's stat, followed by those of the files it includes (a change to an included
    file is a change of the file: studio's llm_config.hocon, a designer's generated manifest)."""
    own = _stat(path)
    if own is None:
        return None
    if path.suffix.lower() not in HOCON_SUFFIXES:
        return own
    cached = _INCLUDES.get(path)
    if cached is None or cached[0] != own or any(_stat(other) != seen for other, seen in cached[1]):
        # Something changed: read the includes again (a changed file may include others now).
        cached = _INCLUDES[path] = (own, [(other, _stat(other)) for other in included_files(path)])
    parts = list(own)
    for _, seen in cached[1]:
        parts.extend(seen or (-1, -1, -1))
    return tuple(parts)
