"""Where a HOCON ``include`` is looked for, and refusing one that is found nowhere.

neuro-san parses a network file (and a manifest) without a base directory, so a
relative ``include "registries/aaosa.hocon"`` is read from the **working directory**:
neuro-san-studio writes its includes that way, relative to the project root that
``ns run`` starts the server in. Files written for a server started elsewhere include
their neighbours by name (``include "llm_config.hocon"``), which only the including
file's folder finds. We look in the working directory first, then in the including
file's folder, and rewrite the include to the absolute path found before pyhocon parses
the text.

pyhocon then parses an included file with that file's folder as its base, as it does in
neuro-san, so an include *inside* an included file is looked for there (neuro-san's
rule too). Where neuro-san only logs a pyhocon warning for an include that is found
nowhere and serves the network without what it held, we refuse the file with the path
of the missing include: a network that silently lost its ``llm_config`` or its shared
instructions is worse than one that is not served.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from neuro_san.core.load_errors import NetworkLoadError

#: After ``include``: ``"path"``, ``file("path")``, ``required("path")`` or
#: ``required(file("path"))``; ``url(…)``/``classpath(…)``/``package(…)`` are left alone.
_TARGET = re.compile(r'\s*(?:required\s*\(\s*)?(?:file\s*\(\s*)?"((?:[^"\\\n]|\\.)*)"')
_KEYWORD = re.compile(r"include\b")
#: What may come just before a key (and so before an include directive).
_KEY_START = frozenset("{,\n\r\t ")

#: Guards against a file that (indirectly) includes itself.
_MAX_DEPTH = 20


def resolve_includes(text: str, path: Path) -> str:
    """``text`` (of the file ``path``) with each relative include made absolute.

    Raises :class:`NetworkLoadError` naming the include when it is found neither in the
    working directory nor beside ``path``, or when a file it includes in turn includes
    one that is missing.
    """
    pieces: list[str] = []
    done = 0
    for start, end, target in _include_targets(text):
        if _left_alone(target):
            continue
        found = _find(target, path)
        line = text.count("\n", 0, start) + 1
        if found is None:
            cwd = Path.cwd()
            raise NetworkLoadError(
                str(path),
                f"line {line}",
                f"include {target!r} not found: looked for {cwd / target} (the working directory) "
                f"and {path.parent / target} (the including file's folder)",
                line=line,
            )
        _check_nested(found, str(path), line, 1)
        pieces.append(text[done:start])
        pieces.append(_quoted(str(found)))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _left_alone(target: str) -> bool:
    # Absolute paths, URLs and globs are pyhocon's to read as they are.
    return os.path.isabs(target) or "://" in target or "*" in target or "?" in target


def _find(target: str, including: Path) -> Path | None:
    for folder in (Path.cwd(), including.parent):
        candidate = folder / target
        if candidate.is_file():
            return candidate.resolve()
    return None


def _check_nested(path: Path, top: str, line: int, depth: int) -> None:
    """Every include inside ``path`` exists where pyhocon will look: ``path``'s folder."""
    if depth > _MAX_DEPTH:
        raise NetworkLoadError(top, f"line {line}", f"includes nest deeper than {_MAX_DEPTH} files (a cycle?)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise NetworkLoadError(top, f"line {line}", f"cannot read included file {path}: {error}") from error
    for _, _, target in _include_targets(text):
        if _left_alone(target):
            continue
        nested = path.parent / target
        if not nested.is_file():
            raise NetworkLoadError(
                top,
                f"line {line}",
                f"the included file {path} includes {target!r}, which is not found at {nested}",
                line=line,
            )
        _check_nested(nested, top, line, depth + 1)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _include_targets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, path) of the quoted path of each include directive in ``text``,
    skipping strings and comments (a prompt may well say ``include "x"``)."""
    found: list[tuple[int, int, str]] = []
    index = 0
    size = len(text)
    while index < size:
        char = text[index]
        if text.startswith('"""', index):
            close = text.find('"""', index + 3)
            index = size if close < 0 else close + 3
            while index < size and text[index] == '"':  # """ may end with more quotes
                index += 1
        elif char == '"':
            index = _string_end(text, index)
        elif char == "#" or text.startswith("//", index):
            newline = text.find("\n", index)
            index = size if newline < 0 else newline
        elif (index == 0 or text[index - 1] in _KEY_START) and _KEYWORD.match(text, index):
            match = _TARGET.match(text, index + len("include"))
            if match is None:
                index += len("include")
                continue
            found.append((match.start(1) - 1, match.end(1) + 1, _unescape(match.group(1))))
            index = match.end()
        else:
            index += 1
    return found


def _string_end(text: str, start: int) -> int:
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] in '"\n':
            return index + 1
        else:
            index += 1
    return index


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def included_files(path: Path) -> list[Path]:
    """The files ``path`` includes, directly or not, found as a load would find them;
    for one found nowhere, the places it would be found (so its arrival is a change).
    For hot reload: a change to an included file (a studio project's
    ``config/llm_config.hocon``, or the ``registries/generated/manifest.hocon`` a designer
    writes) is a change of ``path``."""
    found: list[Path] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return found
    for _, _, target in _include_targets(text):
        if not _left_alone(target):
            top = _find(target, path)
            if top is not None:
                found.append(top)
                _nested(top, found, 1)
            else:
                found += [Path.cwd() / target, path.parent / target]
    return found


def _nested(path: Path, found: list[Path], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    for _, _, target in _include_targets(text):
        nested = path.parent / target
        if not _left_alone(target) and nested not in found:
            found.append(nested)
            if nested.is_file():
                _nested(nested, found, depth + 1)
