"""Which URLs may receive A2A push notifications (SSRF): http(s) to public addresses only.

Checked after DNS resolution (every address the name resolves to), when a configuration
is set and again before each delivery. ``AGENT_A2A_PUSH_ALLOWED_NETWORKS`` (comma-separated
CIDRs) lets internal ranges in, e.g. a receiver on the cluster network. No SDK import:
the composition root checks the variable at start.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

ALLOWED_ENV = "AGENT_A2A_PUSH_ALLOWED_NETWORKS"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def allowed_networks(env: Mapping[str, str] | None = None) -> tuple[Network, ...]:
    """The ranges let in despite being internal; raises ValueError naming a bad entry."""
    raw = (os.environ if env is None else env).get(ALLOWED_ENV, "")
    networks: list[Network] = []
    for item in (part.strip() for part in raw.split(",")):
        if item:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{ALLOWED_ENV}: {item!r} is not an address range (e.g. 10.1.0.0/16)") from None
    return tuple(networks)


class PushUrlPolicy:
    """Refuses URLs that would make this server call inside its own network (SSRF)."""

    def __init__(self, allowed: tuple[Network, ...] = ()) -> None:
        self._allowed = allowed

    async def why_refused(self, url: str) -> str | None:
        """None when ``url`` may receive notifications, else the reason."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return "the URL cannot be parsed"
        if parts.scheme not in ("http", "https"):
            return "only http and https URLs receive notifications"
        if not parts.hostname:
            return "the URL names no host"
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        except OSError:
            return f"the host {parts.hostname!r} does not resolve"
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
                address = address.ipv4_mapped
            if not address.is_global and not any(address in network for network in self._allowed):
                return (f"{parts.hostname} resolves to {address}, an internal address (loopback, link-local, "
                        f"private or reserved); {ALLOWED_ENV} may allow a range")
        return None
