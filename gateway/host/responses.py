"""JSON bodies, as every room of the HTTP port writes them."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

JSON_TYPE = "application/json"
#: ``json.dumps`` with these arguments builds this encoder on every call (~1 µs): made once.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(data: Any) -> bytes:
    """Compact JSON, UTF-8 kept as is. A lone surrogate (a header's byte that is not UTF-8,
    as aiohttp decodes it, echoed into an error message) becomes "?", not a 500."""
    return _ENCODER.encode(data).encode("utf-8", "replace")


def json_response(status: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> web.Response:
    """A JSON response of an already-encoded ``body``; ``headers`` may repeat a name."""
    response = web.Response(status=status, body=body, headers={"Content-Type": JSON_TYPE})
    if headers:
        for name, value in headers:
            response.headers.add(name, value)
    return response
