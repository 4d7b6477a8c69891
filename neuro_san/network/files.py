"""Reading a HOCON, YAML or JSON file into plain Python data.

Everything downstream works on plain ``dict``/``list``/scalars: pyhocon's ``ConfigTree``
(which keeps the quotes of quoted keys) never leaves this module. Syntax errors become
:class:`NetworkLoadError` with the file and, when the parser tells, the line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.includes import resolve_includes
from neuro_san.network.parse_cache import cache_dir, parse_cached

HOCON_SUFFIXES = frozenset({".hocon", ".conf"})
YAML_SUFFIXES = frozenset({".yaml", ".yml"})
JSON_SUFFIXES = frozenset({".json"})
#: Every extension a network file or manifest may have.
SUPPORTED_SUFFIXES = HOCON_SUFFIXES | YAML_SUFFIXES | JSON_SUFFIXES

# pyparsing explains "Expected ..." with its whole grammar; the start is enough.
_MAX_REASON_CHARS = 160


def read_document(path: Path) -> Any:
    """Parse ``path`` according to its extension and return plain data.

    Blocking file I/O: call it off the event loop.
    """
    file = str(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise NetworkLoadError(
            file,
            "",
            f"unsupported file type {suffix or '(none)'!r}: use .hocon, .yaml, .yml or .json",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise NetworkLoadError(file, "", f"cannot read file: {error}") from error
    if suffix in HOCON_SUFFIXES:
        return _parse_hocon(text, path)
    if suffix in YAML_SUFFIXES:
        return _parse_yaml(text, file)
    return _parse_json(text, file)


def _parse_hocon(text: str, path: Path) -> Any:
    return parse_cached(text, lambda source: _parse_hocon_now(source, path), cache_dir())


def _parse_hocon_now(text: str, path: Path) -> Any:
    # Imported here: with the parse cache warm, start-up never needs pyhocon (or pyparsing).
    from pyhocon import ConfigFactory

    # Relative includes become absolute paths first: the working directory, then the
    # file's folder (neuro-san reads them from the working directory; see includes.py).
    text = resolve_includes(text, path)
    try:
        tree = ConfigFactory.parse_string(text, basedir=str(path.parent))
    except Exception as error:  # pyhocon raises pyparsing and its own exception types
        line = getattr(error, "lineno", None)
        message = getattr(error, "msg", None) or str(error)
        found = getattr(error, "found", None)
        if found:
            message = f"{message}, found {found}"
        raise _syntax_error(str(path), message, line) from error
    return to_plain(tree)


def _parse_yaml(text: str, file: str) -> Any:
    import yaml  # only when a YAML file is read

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        raise _syntax_error(file, str(problem), line) from error


def _parse_json(text: str, file: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _syntax_error(file, error.msg, error.lineno) from error


def _syntax_error(file: str, message: str, line: int | None) -> NetworkLoadError:
    message = " ".join(message.split())
    if len(message) > _MAX_REASON_CHARS:
        message = message[:_MAX_REASON_CHARS] + "..."
    key_path = f"line {line}" if line is not None else ""
    return NetworkLoadError(file, key_path, f"syntax error: {message}", line=line)


def to_plain(value: Any) -> Any:
    """Turn pyhocon trees (and any mapping) into dicts, recursively; lists stay lists."""
    from pyhocon import ConfigTree  # already loaded: only parsed HOCON gets here

    if isinstance(value, ConfigTree):
        return to_plain(value.as_plain_ordered_dict())
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(item) for item in value]
    return value
