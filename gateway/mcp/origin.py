"""Origin validation against DNS rebinding (MCP transport spec, "Security Warning").

A browser page on ``http://evil.example`` whose name was rebound to 127.0.0.1 sends its
own origin, and its ``Host`` is that same name: so "the Origin equals the Host" proves
nothing, and is not a rule here. Allowed: no Origin at all (non-browser clients send
none), the gateway's configured CORS origins (``*`` allows every origin), an origin whose
host name the server's ``Host`` allowlist admits (loopback names, the bound name,
``AGENT_HTTP_ALLOWED_HOSTS``: :mod:`gateway.host.allowed_hosts`), and an origin on an IP
address that is loopback or the very address the request was sent to (an address cannot
be rebound; the Host allowlist admits any address, an Origin only these).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from gateway.host.allowed_hosts import AllowedHosts, hostname, is_ip_address, is_loopback_ip


def origin_allowed(
    origin: str, request_host: str | None, allowed_hosts: AllowedHosts, configured: Iterable[str]
) -> bool:
    allowed = set(configured)
    if "*" in allowed or origin in allowed:
        return True
    try:
        parts = urlsplit(origin.strip())
        host = (parts.hostname or "").lower().rstrip(".")
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host or parts.username is not None:
        return False
    if hostname(host if ":" not in host else f"[{host}]") is None:
        return False
    if is_ip_address(host):
        own = hostname(request_host) if request_host else None
        return is_loopback_ip(host) or host == own
    return allowed_hosts.allows_name(host)

