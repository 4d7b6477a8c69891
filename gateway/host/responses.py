"""JSON bodies, as every room of the HTTP port writes them, and the streamed response whose
headers go out with its first write."""

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


class HeadersWithFirstWrite(web.StreamResponse):
    """A stream response whose headers go out with its first write, not on their own at
    ``prepare()``: one send instead of two for a stream that writes as soon as it is
    prepared (REST's first frame, AG-UI's RUN_STARTED, the OpenAI API's first chunk), and a
    whole answer written with the end of the body is one send. aiohttp's own
    ``web.Response`` buffers its headers the same way; before aiohttp 3.12 the attribute
    does not exist and headers go out at ``prepare()`` as before. Only for a stream that
    writes at once: a client waiting for the status would otherwise wait for the first event."""

    _send_headers_immediately = False
