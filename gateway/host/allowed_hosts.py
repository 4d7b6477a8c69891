"""The ``Host`` allowlist every route gets (DNS rebinding).

A web page whose DNS name the attacker rebinds to 127.0.0.1 reaches a local server with
the attacker's name in ``Host`` (and in ``Origin``): the browser thinks it talks to the
page's own site. So a request whose ``Host`` names a host the deployment did not list is
refused (421) on every route, by the host (``gateway/host/app.py``), before any front-end.

Allowed by default, with any port: the loopback names (``localhost``, ``*.localhost``,
which browsers resolve to loopback themselves), any literal IP address (rebinding needs a
DNS name; load balancers and kubelet probes send ``Host: <pod IP>:<port>``), the name the
server is bound to when it is one, and a request with no ``Host`` at all (HTTP/1.0 health
checkers; browsers always send one). ``AGENT_HTTP_ALLOWED_HOSTS`` adds public names:
comma-separated exact names or ``*.domain`` patterns (subdomains only); ``*`` allows every
host. A bad entry is refused at start.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

SETTING = "AGENT_HTTP_ALLOWED_HOSTS"
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_PORT = re.compile(r"[0-9]{1,5}")
_MAX_NAME = 253
_REMEMBERED = 1024


@dataclass(frozen=True)
class AllowedHosts:
    names: frozenset[str] = frozenset()
    #: ``*.example.com`` is kept as ``.example.com``.
    suffixes: tuple[str, ...] = ()
    any_host: bool = False
    # Every request asks, and a server sees few distinct Host values: a parse costs
    # microseconds, a dict hit nanoseconds. Bounded, so new values each time only pay the parse.
    _verdicts: dict[str, bool] = field(default_factory=dict, init=False, compare=False, hash=False, repr=False)

    @classmethod
    def parse(cls, text: str | None) -> AllowedHosts:
        """The setting's value; a bad entry is a ValueError naming the setting (refused at start)."""
        names: set[str] = set()
        suffixes: list[str] = []
        any_host = False
        for raw in (text or "").split(","):
            item = raw.strip().lower()
            if not item:
                continue
            if item == "*":
                any_host = True
                continue
            if item.endswith(".") and item != "*.":  # a fully qualified name: its root dot dropped
                item = item[:-1]
            pattern = item.startswith("*.")
            name = item[2:] if pattern else item
            if not (_NAME.fullmatch(name) or (not pattern and is_ip_address(name.strip("[]")))):
                raise ValueError(
                    f"{SETTING}: {raw.strip()!r} is not a host name or a *.domain pattern "
                    "(comma-separated names, no scheme, port or path; * allows every host)"
                )
            if pattern:
                suffixes.append("." + name)
            else:
                names.add(name.strip("[]"))
        return cls(frozenset(names), tuple(suffixes), any_host)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AllowedHosts:
        return cls.parse(env.get(SETTING))

    def with_bound(self, bound: str | None) -> AllowedHosts:
        """Also the name the server listens on (``--host myhost``); addresses are allowed anyway."""
        name = (bound or "").strip().lower().rstrip(".").strip("[]")
        if not name or is_ip_address(name) or not _NAME.fullmatch(name):
            return self
        return replace(self, names=self.names | {name})

    def allows(self, host_header: str | None) -> bool:
        """Whether a request with this ``Host`` header is served."""
        if host_header is None:
            return True  # no browser sends a request without Host: nothing to rebind
        verdict = self._verdicts.get(host_header)
        if verdict is None:
            verdict = self._decide(host_header)
            if len(self._verdicts) < _REMEMBERED:
                self._verdicts[host_header] = verdict
        return verdict

    def _decide(self, host_header: str) -> bool:
        host = hostname(host_header)
        if host is None:
            return False
        return self.any_host or is_ip_address(host) or self.allows_name(host)

    def allows_name(self, host: str) -> bool:
        """A host name (not an address): loopback, bound or listed."""
        if self.any_host or host == "localhost" or host.endswith(".localhost"):
            return True
        return host in self.names or any(host.endswith(suffix) for suffix in self.suffixes)


def parse_host(text: str) -> tuple[str, int | None] | None:
    """``host[:port]`` → (host, port), host lower-cased, IPv6 kept in brackets; None for
    anything else (userinfo, path, query, fragment, spaces, a zone id, port 0 or > 65535)."""
    port_text: str | None = None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        host, rest = text[: end + 1], text[end + 1:]
        if "%" in host:  # a zone id (ipaddress would take it) names an interface of the client's
            return None
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
        if rest:
            if not rest.startswith(":"):
                return None
            port_text = rest[1:]
    else:
        host, colon, port_text = text.partition(":")
        port_text = port_text if colon else None
        if len(host) > _MAX_NAME or not _NAME.fullmatch(host.lower()):
            return None
    if port_text is None:
        return host.lower(), None
    if not _PORT.fullmatch(port_text) or not 0 < int(port_text) < 65536:  # "a:1:2" fails here too
        return None
    return host.lower(), int(port_text)


def hostname(host_header: str) -> str | None:
    """The host of a ``Host`` header, lower case, without port, brackets or trailing dot;
    None when the header is not ``host[:port]`` (see :func:`parse_host`)."""
    parsed = parse_host(host_header.strip())
    if parsed is None:
        return None
    host = parsed[0]
    return host[1:-1] if host.startswith("[") else host.rstrip(".")


def is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_loopback_ip(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False
