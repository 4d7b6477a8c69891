"""The playground's static files, read once at start-up and served from memory.

Only files found under ``static/`` when the server starts are served: a request path is
looked up in that table, never joined onto the filesystem, so ``..`` and friends cannot
reach anything else. ``REQUIRED`` lists what the page cannot work without; when one is
missing (a broken install, a wheel built without its package data) the server says so
at start-up and the page answers 503 with the list instead of a blank page.
"""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: The files the page needs; everything else under static/ is served too.
REQUIRED = (
    "index.html",
    "app.css",
    "js/main.js",
    "js/api.js",
    "js/dom.js",
    "js/markdown.js",
    "js/graph.js",
    "js/timeline.js",
    "js/snippets.js",
)

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json",
}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


@dataclass(frozen=True, slots=True)
class AssetTable:
    files: dict[str, Asset]
    missing: tuple[str, ...]

    def get(self, relative: str) -> Asset | None:
        return self.files.get(relative)


def load_assets(root: Path = STATIC_DIR) -> AssetTable:
    """Every file under ``root`` keyed by its ``/``-separated relative path."""
    files: dict[str, Asset] = {}
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.name.startswith("."):
                continue
            relative = path.relative_to(root).as_posix()
            body = path.read_bytes()
            content_type = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
            files[relative] = Asset(body, content_type, etag)
    missing = tuple(name for name in REQUIRED if name not in files)
    return AssetTable(files, missing)
