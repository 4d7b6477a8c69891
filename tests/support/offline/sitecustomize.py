"""The offline guard: a Python process started with this folder first on its ``PYTHONPATH``
reaches loopback only. Tests never reach the internet; this makes it hold for the server
processes a test starts (ours and upstream neuro-san's, whose networks name MCP servers,
skills on GitHub and web APIs), so a tool that would go out fails at once, the same way on
both sides, instead of waiting on DNS or a connect timeout.

Python imports ``sitecustomize`` on start-up (``site``), after ``PYTHONPATH`` is on
``sys.path`` and before the program's own imports, so every module that later does
``from socket import getaddrinfo`` gets the guarded function. Refused, with
:class:`OfflineRefused` (a ``ConnectionRefusedError``; a lookup also a ``socket.gaierror``,
which is what resolvers and HTTP clients expect of a failed lookup):

- DNS: ``_socket.getaddrinfo`` (which ``socket.getaddrinfo`` and asyncio's own loop call),
  ``gethostbyname(_ex)``, ``gethostbyaddr``, ``getnameinfo``, for any name but
  ``localhost`` (and ``*.localhost``); a forward lookup of an address literal asks nobody
  and passes (connecting to it is checked), a reverse one of a remote address is refused.
- Connections: ``socket.socket.connect``/``connect_ex``/``sendto``/``sendmsg`` (so
  ``socket.create_connection``, urllib3, ssl and asyncio's selector loop) to anything but
  127.0.0.0/8, ::1 (also IPv4-mapped), the unspecified address (which Linux delivers to
  this host) and non-IP families (Unix sockets).
- uvloop, when installed: its loop resolves and connects in C (libuv), past the socket
  module, so its ``create_connection``, ``create_datagram_endpoint``, ``getaddrinfo`` and
  ``getnameinfo`` are wrapped on ``uvloop.Loop`` (a Python subclass of the C loop, which
  ``uvloop.new_event_loop`` and ``uvloop.run`` instantiate).

Not covered: code that resolves and connects natively, past Python's socket module (gRPC's
C core, libcurl, Rust clients such as ``primp``, which studio's ``ddgs`` search tool uses),
``_socket.socket`` used directly, an interpreter started with ``-S``, ``-I`` or ``-E``, and
programs that are not Python (a child process inherits ``PYTHONPATH``, so a Python child is
guarded, ``npx`` is not). Each refusal is also written to stderr, so a server's log shows
what would have gone out.

Installed only when imported as ``sitecustomize`` (start-up); a test importing this module
as ``tests.support.offline.sitecustomize`` gets the checks without patching itself.
"""

from __future__ import annotations

import errno
import functools
import importlib.machinery
import importlib.util
import ipaddress
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

MARK = "tests never reach the internet"
#: Written to stderr once the guard is installed, so a test can check a server runs with it.
ON = "on: loopback only"
#: Names that resolve to this host without asking a DNS server (RFC 6761 for ``.localhost``).
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class OfflineRefused(ConnectionRefusedError):
    """A connection (or lookup) the guard refused. ``errno`` is ECONNREFUSED, so code that
    handles a refused connection handles this one; the message names host and port."""

    def __init__(self, host: Any, port: Any) -> None:
        super().__init__(errno.ECONNREFUSED, f"{MARK}: {_where(host, port)} refused")


class OfflineLookupRefused(OfflineRefused, socket.gaierror):
    """A DNS lookup the guard refused: also a ``gaierror``, as a failed lookup is."""


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _where(host: Any, port: Any) -> str:
    """``host:port``, an IPv6 address in brackets; ``host`` alone for a lookup of no port."""
    name = _text(host)
    name = f"[{name}]" if ":" in name and not name.startswith("[") else name
    return name if port in (None, "", b"") else f"{name}:{_text(port)}"


def local_address(host: str) -> bool | None:
    """Whether the address literal ``host`` stays on this host; None if it is a name."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 scope (``fe80::1%eth0``)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def local_host(host: Any) -> bool:
    """Whether ``host`` (a name or an address literal, str or bytes) is this host.
    None and "" are what a server binding "every interface" resolves: passive, no lookup."""
    if host is None:
        return True
    name = _text(host).strip().lower().rstrip(".")
    if name == "":
        return True
    address = local_address(name.strip("[]"))
    if address is not None:
        return address
    return name in LOCAL_NAMES or name.endswith(".localhost")


def check(host: Any, port: Any) -> None:
    """Raise the guard's error unless ``host`` is this host (a connection): a lookup error
    for a name (resolving it is what would go out first)."""
    if not local_host(host):
        _refuse(host, port, lookup=local_address(_text(host).strip("[]")) is None)


def check_lookup(host: Any, port: Any) -> None:
    """:func:`check` for a forward lookup: an address literal passes (resolving it asks
    nobody; connecting to it is checked)."""
    if local_address(_text(host).strip("[]")) is None and not local_host(host):
        _refuse(host, port, lookup=True)


def check_reverse(host: Any, port: Any) -> None:
    """:func:`check` for a reverse lookup (an address to a name asks a DNS server)."""
    if not local_host(host):
        _refuse(host, port, lookup=True)


def check_address(family: int, address: Any) -> None:
    """:func:`check` for a socket address: (host, port[, …]) of AF_INET/AF_INET6; other
    families (AF_UNIX, netlink) never leave the host."""
    if family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple) and address:
        check(address[0], address[1] if len(address) > 1 else "")


def _refuse(host: Any, port: Any, lookup: bool) -> None:
    error = (OfflineLookupRefused if lookup else OfflineRefused)(host, port)
    _report(error)
    raise error


def _report(error: OSError) -> None:
    # Libraries often swallow a failed connection (a retry, a fallback): the log keeps it.
    try:
        sys.stderr.write(f"[offline guard, pid {os.getpid()}] {error.strerror}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed or absent
        pass


def _guard_lookups() -> None:
    import _socket

    def wrap(name: str, checker: Callable[[Any, Any], None], host_of: Callable[..., tuple[Any, Any]]) -> None:
        original = getattr(_socket, name)

        @functools.wraps(original)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            checker(*host_of(*args, **kwargs))
            return original(*args, **kwargs)

        # Both: socket.py copied _socket's functions at its import (``from _socket import *``),
        # and socket.getaddrinfo, a Python wrapper, calls _socket.getaddrinfo.
        setattr(_socket, name, guarded)
        if getattr(socket, name, None) is original:
            setattr(socket, name, guarded)

    wrap("getaddrinfo", check_lookup, lambda host, port=None, *a, **k: (host, port))
    wrap("gethostbyname", check_lookup, lambda host: (host, ""))
    wrap("gethostbyname_ex", check_lookup, lambda host: (host, ""))
    wrap("gethostbyaddr", check_reverse, lambda host: (host, ""))
    wrap("getnameinfo", _check_nameinfo, lambda sockaddr, flags=0: (sockaddr, flags))


def _check_nameinfo(sockaddr: Any, flags: int) -> None:
    # NI_NUMERICHOST asks for the address as text: no lookup.
    if not flags & socket.NI_NUMERICHOST:
        check_reverse(sockaddr[0], sockaddr[1])


def _guard_sockets() -> None:
    cls = socket.socket
    connect, connect_ex, sendto, sendmsg = cls.connect, cls.connect_ex, cls.sendto, cls.sendmsg

    def guarded_connect(self: socket.socket, address: Any) -> None:
        check_address(self.family, address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        # Raises rather than returning an errno: the message is the point, and connect_ex
        # raises too when its address cannot be resolved.
        check_address(self.family, address)
        return connect_ex(self, address)

    def guarded_sendto(self: socket.socket, data: Any, *rest: Any) -> int:
        check_address(self.family, rest[-1] if rest else None)
        return sendto(self, data, *rest)

    def guarded_sendmsg(self: socket.socket, buffers: Any, *rest: Any) -> int:
        check_address(self.family, rest[2] if len(rest) > 2 else None)
        return sendmsg(self, buffers, *rest)

    guarded: dict[str, Callable[..., Any]] = {
        "connect": guarded_connect,
        "connect_ex": guarded_connect_ex,
        "sendto": guarded_sendto,
        "sendmsg": guarded_sendmsg,
    }
    for name, method in guarded.items():
        setattr(cls, name, method)


def _guard_uvloop() -> bool:
    """Wrap uvloop's loop when it is installed (imported here, early: the program imports
    it anyway, and ``uvloop.run`` binds ``new_event_loop`` at its definition)."""
    if importlib.util.find_spec("uvloop") is None:
        return False
    import uvloop

    loop = uvloop.Loop
    create_connection, create_datagram_endpoint = loop.create_connection, loop.create_datagram_endpoint
    getaddrinfo, getnameinfo = loop.getaddrinfo, loop.getnameinfo

    async def guarded_create_connection(self: Any, factory: Any, host: Any = None, port: Any = None,
                                        *args: Any, **kwargs: Any) -> Any:  # fmt: skip
        if kwargs.get("sock") is None:  # a socket given is connected already, or by sock_connect
            check(host, port)
        return await create_connection(self, factory, host, port, *args, **kwargs)

    async def guarded_create_datagram_endpoint(self: Any, factory: Any, local_addr: Any = None,
                                               remote_addr: Any = None, **kwargs: Any) -> Any:  # fmt: skip
        if remote_addr is not None:
            check(remote_addr[0], remote_addr[1])
        return await create_datagram_endpoint(self, factory, local_addr, remote_addr, **kwargs)

    async def guarded_getaddrinfo(self: Any, host: Any, port: Any, **kwargs: Any) -> Any:
        check_lookup(host, port)
        return await getaddrinfo(self, host, port, **kwargs)

    async def guarded_getnameinfo(self: Any, sockaddr: Any, flags: int = 0) -> Any:
        _check_nameinfo(sockaddr, flags)
        return await getnameinfo(self, sockaddr, flags)

    guarded = {
        "create_connection": guarded_create_connection,
        "create_datagram_endpoint": guarded_create_datagram_endpoint,
        "getaddrinfo": guarded_getaddrinfo,
        "getnameinfo": guarded_getnameinfo,
    }
    for name, method in guarded.items():
        setattr(loop, name, method)
    return True


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows, if the interpreter has one (Debian's
    system Python does), so the process is set up as it would be without the guard."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def install() -> None:
    _guard_lookups()
    _guard_sockets()
    uvloop = _guard_uvloop()
    # One line per process: a test (and a reader of a server's log) can see the guard is on.
    sys.stderr.write(f"[offline guard, pid {os.getpid()}] {ON} (sockets, DNS, asyncio"
                     f"{', uvloop' if uvloop else ''})\n")  # fmt: skip
    _chain()


if __name__ == "sitecustomize":
    install()
