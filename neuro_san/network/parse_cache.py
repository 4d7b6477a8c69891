"""A content-addressed cache of parsed HOCON files, like Python's ``__pycache__``.

pyhocon parses with pyparsing: the five bundled networks and their manifest take ~0.2 s
to parse and pyhocon ~0.1 s to import, most of what ``neuro-san serve`` spends before it
is healthy beyond its own imports, and every worker process and restart pays it again.
The parsed document (plain JSON data) is kept under a key made of the file's text, the
pyhocon version and this cache's format, so any change to either is a miss.

Only text whose parse depends on nothing but itself is cached: a file with a
substitution (``${…}``, which may read the environment) or an ``include`` (another file)
is always parsed. The cache is an optimisation and never an error: an unreadable or
corrupt entry is parsed again, an unwritable directory is not written.

``AGENT_HOCON_CACHE_DIR`` names the directory (default ``$XDG_CACHE_HOME`` or
``~/.cache``, then ``neuro-san-grpc/hocon``); ``off`` turns the cache off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from neuro_san.settings import process_env

#: Bumped when what is stored (the plain form of a parsed document) changes shape.
_FORMAT = "1"
_OFF = "off"


def cache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """Where parsed documents are kept, or None when ``AGENT_HOCON_CACHE_DIR=off``."""
    env = process_env() if env is None else env
    chosen = env.get("AGENT_HOCON_CACHE_DIR", "").strip()
    if chosen.lower() == _OFF:
        return None
    if chosen:
        return Path(chosen)
    base = env.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "neuro-san-grpc" / "hocon"


#: An include directive: where a key may start, ``include`` and then a file name or a
#: ``file(``/``url(``/``classpath(``/``required(`` form. (A word "include" in a prompt is not one.)
_INCLUDE = re.compile(r'(?:^|[{,])\s*include\s*(?:"|(?:required|file|url|classpath)\s*\()', re.MULTILINE)


def cacheable(text: str) -> bool:
    """True when parsing ``text`` depends on nothing but ``text``."""
    return "${" not in text and _INCLUDE.search(text) is None


def parse_cached(text: str, parse: Callable[[str], Any], directory: Path | None) -> Any:
    """``parse(text)``, from the cache when an entry for ``text`` is there."""
    if directory is None or not cacheable(text):
        return parse(text)
    entry = directory / f"{_key(text)}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(entry.read_text(encoding="utf-8"))
    document = parse(text)
    _store(entry, document)
    return document


def _key(text: str) -> str:
    digest = hashlib.sha256()
    for part in (_FORMAT, _pyhocon_version(), text):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def _pyhocon_version() -> str:
    try:
        return metadata.version("pyhocon")
    except metadata.PackageNotFoundError:
        return "unknown"


def _store(entry: Path, document: Any) -> None:
    """Write atomically (workers starting together may race), or not at all."""
    try:
        body = json.dumps(document, ensure_ascii=False)
    except (TypeError, ValueError):  # not plain JSON data: nothing to keep
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
    except OSError:  # read-only home, no permission: run without the cache
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(body)
        os.replace(temporary, entry)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
