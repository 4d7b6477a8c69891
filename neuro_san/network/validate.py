"""``neuro-san validate``: check network files and manifests without serving them.

Each path is a network file or a manifest (named ``manifest.*``, or whose values are all
``true``/``false``/``{serve, public}``). Every fault of every file is reported in one
run, as ``serve`` would refuse it at load: the file's own faults (types, unknown agents
in ``tools``, malformed MCP/A2A/agent URLs, JSON Schema of ``parameters``), models no
provider serves (with the closest known names), coded tool classes not found on the
tool roots (``AGENT_TOOL_PATH``, ``--tool-path``, the bundled tools; the paths searched
are named) and ``/name`` tools whose network is served neither by a manifest given nor
by those of ``AGENT_MANIFEST_FILE`` (the packaged manifest when neither is given).

Prints ``OK <name>`` per good network on stdout and one
``file: key path: reason (in agent 'name')`` line per fault on stderr. The exit code is 0
when everything is good, 1 otherwise.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.coded_refs import BUNDLED_TOOLS
from neuro_san.network.files import read_document
from neuro_san.network.loader import agent_positions, inspect_network, unserved_network_faults
from neuro_san.network.manifest import Manifest, looks_like_manifest, network_name, parse_manifest, read_manifest
from neuro_san.network.registry import manifest_paths_from_env
from neuro_san.settings import process_env

_AGENT_PATH = re.compile(r"tools\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class _Target:
    path: Path
    name: str
    serve: bool = True


def main_validate(
    paths: list[str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    tool_paths: Sequence[str] = (),
) -> int:
    """Validate every path; return the process exit code."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if not paths:
        print("nothing to validate: give network files or manifests", file=err)
        return 1
    roots = [Path(p) for p in [*tool_paths, *process_env().get("AGENT_TOOL_PATH", "").split(":")] if p]
    roots.append(BUNDLED_TOOLS)
    # In the order given: the faults of a path, or the networks it lists.
    items: list[_Target | NetworkLoadError] = []
    manifests: list[Manifest] = []
    for raw_path in paths:
        _collect(Path(raw_path), items, manifests)
    targets = [item for item in items if isinstance(item, _Target)]
    served = _served(manifests, targets)
    lines: list[str] = []
    for target in items:
        if isinstance(target, NetworkLoadError):
            lines.append(str(target))
            continue
        if not target.serve:
            print(f"SKIP {target.name} (not served)", file=out)
            continue
        spec, faults = inspect_network(target.path, target.name, tool_roots=roots)
        positions: dict[str, int] = {}
        if spec is not None:
            try:
                document = read_document(target.path)
                positions = agent_positions(document) if isinstance(document, dict) else {}
            except NetworkLoadError:
                pass
            faults = faults + unserved_network_faults(spec, served, positions)
        if not faults:
            print(f"OK {target.name}", file=out)
        names = {index: name for name, index in positions.items()}
        lines.extend(_line(fault, names) for fault in faults)
    for line in lines:
        print(line, file=err)
    return 1 if lines else 0


def _collect(path: Path, items: list[_Target | NetworkLoadError], manifests: list[Manifest]) -> None:
    try:
        document = read_document(path)
    except NetworkLoadError as error:
        items.append(error)
        return
    if not (path.stem == "manifest" or looks_like_manifest(document)):
        items.append(_Target(path, network_name(path.name)))
        return
    try:
        manifest = parse_manifest(document, path)
    except NetworkLoadError as error:
        items.append(error)
        return
    manifests.append(manifest)
    items.extend(manifest.errors)
    for entry in manifest.entries.values():
        items.append(_Target(entry.path, entry.name, entry.serve))


def _served(manifests: list[Manifest], targets: list[_Target]) -> set[str]:
    """The networks a ``/name`` tool may call: those the manifests given serve, those of
    ``AGENT_MANIFEST_FILE`` (what ``serve`` reads), or, with neither, the packaged
    manifest's; and the network files given."""
    manifests = list(manifests)
    setting = process_env().get("AGENT_MANIFEST_FILE", "").strip()
    if setting or not manifests:
        for path in manifest_paths_from_env(setting):
            try:
                manifests.append(read_manifest(path))
            except NetworkLoadError:
                continue  # serve reports it; here only what it would serve matters
    served = {target.name for target in targets if target.serve}
    for manifest in manifests:
        served.update(name for name, entry in manifest.entries.items() if entry.serve)
    return served


def _line(fault: NetworkLoadError, names: dict[int, str]) -> str:
    """``file: key path: reason (in agent 'name')``: the agent named when the key path
    is inside one."""
    match = _AGENT_PATH.match(fault.key_path)
    if match is None or int(match.group(1)) not in names:
        return str(fault)
    return f"{fault} (in agent {names[int(match.group(1))]!r})"
