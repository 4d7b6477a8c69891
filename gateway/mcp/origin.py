"""Origin validation against DNS rebinding (MCP transport spec, "Security Warning").

A browser page on ``http://evil.example`` whose name was rebound to 127.0.0.1 sends its
own origin; a server that checks it refuses the request. Allowed: no Origin at all
(non-browser clients send none), an origin on a loopback host, the server's own origin
(same host as the request's ``Host``), and the gateway's configured CORS origins
(``*`` allows every origin).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def origin_allowed(origin: str, request_host: str | None, configured: Iterable[str]) -> bool:
    allowed = set(configured)
    if "*" in allowed or origin in allowed:
        return True
    try:
        parts = urlsplit(origin.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host in LOOPBACK_HOSTS or host.endswith(".localhost"):
        return True
    if request_host:
        own = urlsplit(f"//{request_host}")
        try:
            own_port = own.port
        except ValueError:
            return False
        default = 443 if parts.scheme == "https" else 80
        return (own.hostname or "").lower() == host and (own_port or default) == (port or default)
    return False
