"""Which URLs may receive A2A push notifications (SSRF): http(s) to public addresses only.

Checked after DNS resolution (every address the name resolves to), when a configuration
is set and again before each delivery; the delivery then connects to the address it
checked (:meth:`PushUrlPolicy.resolve` answers it), never resolving the name a second time,
so a name that rebinds between the check and the connect cannot reach inside.
Refused: every address that is not global (loopback, link-local, private, shared,
reserved, unspecified), multicast, and every IPv6 address that embeds or maps an IPv4
one that would be refused (IPv4-mapped, IPv4-compatible, NAT64 ``64:ff9b::/96`` and the
local-use ``64:ff9b:1::/48``, 6to4 ``2002::/16``, Teredo ``2001::/32``).
``AGENT_A2A_PUSH_ALLOWED_NETWORKS`` (comma-separated CIDRs) lets internal ranges in, e.g.
a receiver on the cluster network. No SDK import: the composition root checks the
variable at start.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from neuro_san.settings import process_env

ALLOWED_ENV = "AGENT_A2A_PUSH_ALLOWED_NETWORKS"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: host, port → the addresses it resolves to (as text); raises OSError when it does not.
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def allowed_networks(env: Mapping[str, str] | None = None) -> tuple[Network, ...]:
    """The ranges let in despite being internal; raises ValueError naming a bad entry."""
    raw = (process_env() if env is None else env).get(ALLOWED_ENV, "")
    networks: list[Network] = []
    for item in (part.strip() for part in raw.split(",")):
        if item:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{ALLOWED_ENV}: {item!r} is not an address range (e.g. 10.1.0.0/16)") from None
    return tuple(networks)


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, by the system's resolver."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _embedded(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    value = int(address)
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address in _IPV4_COMPATIBLE or address in _NAT64:
        return [ipaddress.IPv4Address(value & 0xFFFFFFFF)]
    if address in _SIX_TO_FOUR:
        return [ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)]
    if address in _TEREDO:  # server, then the client (stored inverted)
        return [ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF), ipaddress.IPv4Address(~value & 0xFFFFFFFF)]
    return []


@dataclass(frozen=True)
class Resolved:
    """A URL whose every address was checked, and the one to connect to."""

    url: str
    host: str
    address: str


class PushUrlPolicy:
    """Refuses URLs that would make this server call inside its own network (SSRF)."""

    def __init__(self, allowed: tuple[Network, ...] = (), resolver: Resolver = system_resolver) -> None:
        self._allowed = allowed
        self._resolver = resolver

    def _internal(self, address: Address) -> bool:
        if any(address in network for network in self._allowed):
            return False  # the operator let this range in
        if not address.is_global or address.is_multicast:
            return True
        if isinstance(address, ipaddress.IPv6Address):
            if address in _NAT64_LOCAL:  # local-use NAT64: translated inside this network
                return True
            return any(self._internal(inner) for inner in _embedded(address))
        return False

    async def resolve(self, url: str) -> Resolved | str:
        """The checked address to connect to, or the reason the URL is refused."""
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
            answers = await self._resolver(parts.hostname, port)
        except OSError:
            return f"the host {parts.hostname!r} does not resolve"
        if not answers:
            return f"the host {parts.hostname!r} does not resolve"
        for answer in answers:
            address = ipaddress.ip_address(answer.split("%", 1)[0])
            if self._internal(address):
                return (f"{parts.hostname} resolves to {address}, an internal address (loopback, link-local, "
                        f"private, multicast, reserved, or one embedding such an address); {ALLOWED_ENV} "
                        f"may allow a range")
        return Resolved(url=url, host=parts.hostname, address=answers[0].split("%", 1)[0])

    async def why_refused(self, url: str) -> str | None:
        """None when ``url`` may receive notifications, else the reason."""
        resolved = await self.resolve(url)
        return resolved if isinstance(resolved, str) else None
