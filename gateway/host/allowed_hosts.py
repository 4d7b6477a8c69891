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
_LABEL = r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?"
_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_PORT = re.compile(r":\d{1,5}")
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
            if not (_NAME.match(name) or (not pattern and is_ip_address(name.strip("[]")))):
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
        if not name or is_ip_address(name) or not _NAME.match(name):
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


def hostname(host_header: str) -> str | None:
    """The host of a ``Host`` header, lower case, port and trailing dot dropped; None
    when the header is not ``host[:port]`` (userinfo, a path, a bad port)."""
    value = host_header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1:] and not _PORT.fullmatch(value[end + 1:])):
            return None
        address = value[1:end]
        return address if is_ip_address(address) and ":" in address else None
    name, colon, port = value.partition(":")
    if colon and not (port.isdigit() and len(port) <= 5):
        return None
    name = name.rstrip(".")
    if is_ip_address(name) or _NAME.match(name):
        return name
    return None


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
