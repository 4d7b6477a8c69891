"""``neuro-san validate``: check network files and manifests without serving them.

Each path is a network file or a manifest (named ``manifest.*``, or whose values are all
``true``/``false``/``{serve, public}``). Prints ``OK <name>`` per good network on stdout
and one ``file: key path: reason`` line per problem on stderr. The exit code is 0 when
everything is good, 1 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from neuro_san.network.errors import NetworkLoadError
from neuro_san.network.files import read_document
from neuro_san.network.loader import load_network
from neuro_san.network.manifest import looks_like_manifest, network_name, parse_manifest


def main_validate(paths: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Validate every path; return the process exit code."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    errors: list[NetworkLoadError] = []
    for raw_path in paths:
        errors.extend(_validate_path(Path(raw_path), out))
    for error in errors:
        print(error, file=err)
    if not paths:
        print("nothing to validate: give network files or manifests", file=err)
        return 1
    return 1 if errors else 0


def _validate_path(path: Path, out: TextIO) -> list[NetworkLoadError]:
    try:
        document = read_document(path)
    except NetworkLoadError as error:
        return [error]
    if not (path.stem == "manifest" or looks_like_manifest(document)):
        return _validate_network(path, network_name(path.name), out)
    try:
        manifest = parse_manifest(document, path)
    except NetworkLoadError as error:
        return [error]
    errors = list(manifest.errors)
    for entry in manifest.entries.values():
        if not entry.serve:
            print(f"SKIP {entry.name} (not served)", file=out)
            continue
        errors.extend(_validate_network(entry.path, entry.name, out))
    return errors


def _validate_network(path: Path, name: str, out: TextIO) -> list[NetworkLoadError]:
    try:
        load_network(path, name)
    except NetworkLoadError as error:
        return [error]
    print(f"OK {name}", file=out)
    return []
