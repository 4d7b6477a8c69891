"""Request ids: what a client may send as its own, and the ids made up when it sends none.

The server logs every call with its id and ends the call with it (trailing metadata
``request-id``); the HTTP port knows it before the call (the client's, or one it makes
up and sends as ``request_id``), so it can answer it in the response headers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

#: The metadata keys a client's own request id may come in: neuro-san's, then the usual HTTP one.
REQUEST_ID_KEYS = ("request_id", "x-request-id")


def sane_request_id(value: object) -> bool:
    """An id a client may choose: printable, 1-128 characters (it goes into every log line)."""
    return isinstance(value, str) and 0 < len(value) <= 128 and value.isprintable()


def client_request_id(metadata: Iterable[tuple[str, Any]]) -> str | None:
    """The client's own request id (``request_id``, else ``x-request-id``), when sane."""
    found: dict[str, str] = {}
    for key, value in metadata:
        if key in REQUEST_ID_KEYS and key not in found and sane_request_id(value):
            found[key] = value
    return next((found[key] for key in REQUEST_ID_KEYS if key in found), None)


def new_request_id() -> str:
    """16 hex digits (was uuid4().hex[:16], ~3x the cost for the same 64 random bits bar
    uuid4's fixed version digit)."""
    return os.urandom(8).hex()


def request_id_from(metadata: Iterable[tuple[str, Any]]) -> str:
    """The client's request id when it sent a sane one, else a new id."""
    return client_request_id(metadata) or new_request_id()
