"""How the Agent Cards are served over HTTP: the URLs they name, and how they are cached.

A card names this server's own URLs (every interface, the gRPC target too), and a cache in
front of the server may keep it for everyone. So those URLs never come from what a client
may write freely:

- with ``AGENT_HTTP_PUBLIC_URL`` (``scheme://host[:port][/prefix]``) they are that URL, the
  same for every request (and the gRPC target is ``AGENT_GRPC_PUBLIC_TARGET``, or that
  URL's host with the gRPC port);
- without it, from the request's ``Host`` only when it is a plain ``host[:port]`` (a DNS
  name, an IPv4 address or a bracketed IPv6 address, a port of 1-65535): anything else
  (userinfo, a path, a query, spaces…) is a 400, never echoed. Such a card says
  ``Vary: Host``.

Cards carry ``Cache-Control: max-age=AGENT_A2A_CARD_MAX_AGE`` (``private`` when the caller
sent credentials: a key may show private networks), ``Vary`` on the credentials, an
``ETag`` (a hash of the body) and answer ``If-None-Match`` (``*``, lists, weak tags) with
304 and no body (A2A 1.0 §8.6.1, RFC 9110 §13.1.2).

This module imports no a2a-sdk: the settings are checked at start
(:func:`gateway.composition.protocol_frontends`), before the front-end is loaded.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from gateway.host.allowed_hosts import parse_host
from gateway.host.errors import bad_request
from gateway.host.responses import JSON_TYPE
from neuro_san.core.env_settings import env_number
from neuro_san.settings import process_env

log = logging.getLogger(__name__)

PUBLIC_URL_ENV = "AGENT_HTTP_PUBLIC_URL"
GRPC_TARGET_ENV = "AGENT_GRPC_PUBLIC_TARGET"
MAX_AGE_ENV = "AGENT_A2A_CARD_MAX_AGE"
DEFAULT_MAX_AGE = 300

#: A DNS name or IPv4 address: dot-separated labels of letters, digits, ``-`` and ``_``
#: (one trailing dot allowed). Nothing else of RFC 3986's reg-name (``%``, ``!``, ``$``…)
#: is a host anyone deploys under, and each could turn a URL into another one.
#: Entity tags of ``If-None-Match`` (RFC 9110 §8.8.3: ``W/"…"`` or ``"…"``).
_TAG = re.compile(r'\s*(?:W/)?"([^"]*)"\s*(?:,|$)')
#: The headers a card's body depends on besides the Host: the credentials (a key may show
#: a private network).
_CREDENTIAL_HEADERS = "Authorization, X-Api-Key"


def _host_port(host: str, port: int | None) -> str:
    return host if port is None else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class CardSettings:
    """``public_url``: the configured base of every card URL (None: the request's Host);
    ``grpc_target``: the gRPC interface's configured address; ``max_age``: seconds a card
    may be cached."""

    public_url: str | None = None
    grpc_target: str | None = None
    max_age: int = DEFAULT_MAX_AGE

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CardSettings:
        """Raises ValueError naming the variable for a value that cannot work."""
        values = process_env() if env is None else env
        public_url = _public_url(values.get(PUBLIC_URL_ENV, "").strip())
        target = values.get(GRPC_TARGET_ENV, "").strip() or None
        if target is not None:
            parsed = parse_host(target)
            if parsed is None or parsed[1] is None:
                raise ValueError(f"{GRPC_TARGET_ENV}={target!r} must be host:port (the gRPC port's public "
                                 "address, named in the A2A cards)")
            target = _host_port(*parsed)
        max_age = env_number(values, MAX_AGE_ENV, int)
        return cls(public_url, target, DEFAULT_MAX_AGE if max_age is None else int(max_age))


def _public_url(text: str) -> str | None:
    """``AGENT_HTTP_PUBLIC_URL`` without a trailing ``/``; None when unset."""
    if not text:
        return None
    fix = (f"{PUBLIC_URL_ENV}={text!r} must be http(s)://host[:port] with an optional path prefix, "
           "no user, query or fragment (the HTTP port's URL as clients reach it, named in the A2A cards)")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise ValueError(fix) from None
    path_ok = re.fullmatch(r"(/[A-Za-z0-9._~-]+)*/?", parts.path) is not None
    if (parts.scheme not in ("http", "https") or "@" in parts.netloc or parse_host(parts.netloc) is None
            or parts.query or parts.fragment or "?" in text or "#" in text or not path_ok):
        raise ValueError(fix)
    host, port = parse_host(parts.netloc) or ("", None)
    return f"{parts.scheme}://{_host_port(host, port)}{parts.path.rstrip('/')}"


@dataclass(frozen=True, slots=True)
class CardPlace:
    """Where a card says the server is: its HTTP ``base``, its gRPC ``grpc`` address (None:
    not served), and whether that came from the request's Host (``Vary: Host``)."""

    base: str
    grpc: str | None
    from_host: bool


def card_place(request: web.Request, settings: CardSettings, grpc_port: int) -> CardPlace:
    """The place a card for ``request`` names (``grpc_port`` 0: no gRPC interface); raises a
    400 GatewayError for a Host that is not a plain ``host[:port]`` when no public URL is
    configured."""
    if settings.public_url is not None:
        host, from_host = urlsplit(settings.public_url).hostname or "", False
        base = settings.public_url
        if ":" in host:  # urlsplit drops an IPv6 address's brackets
            host = f"[{host}]"
    else:
        text = request.headers.get("Host", "")
        parsed = parse_host(text)
        if parsed is None:
            # One line, the value quoted and cut (repr: no control characters reach the log).
            log.info("refused an Agent Card request: its Host %.200r is not host[:port]", text)
            raise bad_request(f"the Host header must be host[:port] (or set {PUBLIC_URL_ENV} to name this "
                              "server's public URL)", "Host")
        host, from_host = parsed[0], True
        base = f"{request.scheme}://{_host_port(*parsed)}"
    grpc = (settings.grpc_target or _host_port(host, grpc_port)) if grpc_port else None
    return CardPlace(base, grpc, from_host)


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def none_match(header: str | None, etag: str) -> bool:
    """True when ``If-None-Match`` matches ``etag`` (weak comparison, RFC 9110 §13.1.2):
    ``*``, or any tag of the list, ``W/`` or not. A malformed header matches nothing."""
    if header is None:
        return False
    text = header.strip()
    if text == "*":
        return True
    wanted = etag.strip('"')
    position = 0
    while position < len(text):
        found = _TAG.match(text, position)
        if found is None:
            return False
        if found.group(1) == wanted:
            return True
        position = found.end()
    return False


def card_response(request: web.Request, body: bytes, place: CardPlace, settings: CardSettings) -> web.Response:
    """200 with the card, or 304 with no body when ``If-None-Match`` names it; both with the
    caching headers (a 304 carries them too, RFC 9110 §15.4.5)."""
    credentials = bool(request.headers.get("Authorization") or request.headers.get("X-Api-Key"))
    etag = etag_of(body)
    headers = {
        # With credentials the card may list what only that key sees: no shared cache keeps it.
        "Cache-Control": f"{'private' if credentials else 'public'}, max-age={settings.max_age}",
        "Vary": f"Host, {_CREDENTIAL_HEADERS}" if place.from_host else _CREDENTIAL_HEADERS,
        "ETag": etag,
    }
    if none_match(request.headers.get("If-None-Match"), etag):
        return web.Response(status=304, headers=headers)
    return web.Response(status=200, body=body, headers={**headers, "Content-Type": JSON_TYPE})
