"""The HTTP side of OAuth (MCP authorization): what only an HTTP server can say.

Tokens are validated in the service layer, for every transport (see
:mod:`neuro_san.service.oauth`). Here, with ``AGENT_OAUTH_ISSUER`` set:

- the Protected Resource Metadata (RFC 9728) at ``/.well-known/oauth-protected-resource``
  (this server, audience ``AGENT_OAUTH_AUDIENCE``) and at
  ``/.well-known/oauth-protected-resource/mcp`` (the MCP endpoint), naming the
  authorization server and the scopes. Published only when an issuer is configured: hosts
  start an OAuth flow whenever the document exists, even when a key would do;
- the ``WWW-Authenticate`` challenge of a 401 (``resource_metadata``, ``scope``, and
  ``error="invalid_token"`` for a token that was refused) and of a 403
  ``insufficient_scope``, on REST, MCP and A2A alike.

Without an issuer a 401 still names the scheme (``Bearer``: API keys travel as bearer
tokens) and nothing else changes.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
from aiohttp import web

from gateway.host.errors import RpcFailure
from gateway.host.frontends import FrontEndContext, FrontEndFactory, FrontEndRoute
from neuro_san.core.access import DEFAULT_SCOPE
from neuro_san.core.oauth_settings import MCP_RESOURCE_PATH, OAuthSettings, metadata_urls
from neuro_san.settings import process_env

log = logging.getLogger(__name__)
METADATA_PATH = "/.well-known/oauth-protected-resource"
_INVALID_TOKEN = "INVALID_TOKEN"
_INSUFFICIENT_SCOPE = "INSUFFICIENT_SCOPE"


@functools.cache
def _settings_from_environment() -> OAuthSettings | None:
    # Read once per process. A bad setting is refused at start (ServerConfig.from_env for
    # `serve`, oauth_frontends() for the standalone gateway), so it cannot be met here.
    return OAuthSettings.from_env(process_env())


def oauth_settings() -> OAuthSettings | None:
    return _settings_from_environment()


_issuer_documents: dict[str, tuple[str, dict[str, Any]]] = {}
_FETCH_TIMEOUT = aiohttp.ClientTimeout(total=10)
_MAX_DOCUMENT_BYTES = 1 << 20


async def authorization_server(settings: OAuthSettings) -> tuple[str, dict[str, Any]] | None:
    """(metadata URL, metadata) of the issuer (RFC 8414, else OpenID discovery), fetched
    once, for the A2A cards' OAuth2 scheme; None while it cannot be fetched (asked again
    next time). The service finds the issuer's keys on its own (the HTTP port knows nothing
    of the server's insides)."""
    known = _issuer_documents.get(settings.issuer)
    if known is not None:
        return known
    async with aiohttp.ClientSession(timeout=_FETCH_TIMEOUT) as session:
        for url in dict.fromkeys(metadata_urls(settings.issuer)):
            try:
                async with session.get(url, headers={"Accept": "application/json"}) as response:
                    if response.status != 200:
                        continue
                    document = json.loads(await response.content.read(_MAX_DOCUMENT_BYTES))
            except (TimeoutError, aiohttp.ClientError, ValueError) as error:
                log.warning("cannot fetch the metadata of %s at %s: %s", settings.issuer, url, error)
                continue
            if isinstance(document, dict) and document.get("issuer") == settings.issuer:  # RFC 8414 §3.3
                _issuer_documents[settings.issuer] = (url, document)
                return url, document
    return None


def resource_for(settings: OAuthSettings, path: str = "") -> str:
    """The resource identifier of ``path`` ("" for the whole server, ``/mcp`` for MCP)."""
    return settings.audience + path


def metadata_url(settings: OAuthSettings, path: str = "") -> str:
    return settings.audience + METADATA_PATH + path


def protected_resource_metadata(settings: OAuthSettings, path: str = "") -> dict[str, object]:
    """RFC 9728 §2: the resource, its authorization server, its scopes, how tokens travel."""
    return {
        "resource": resource_for(settings, path),
        "authorization_servers": [settings.issuer],
        "scopes_supported": [DEFAULT_SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "neuro-san agent networks",
    }


def challenge(failure: RpcFailure, path: str = "") -> list[tuple[str, str]]:
    """The ``WWW-Authenticate`` header for a refused call (401, or 403 for lacking scope);
    ``path`` names the resource it was refused on (``/mcp`` for MCP)."""
    if failure.http_status not in (401, 403):
        return []
    settings = oauth_settings()
    if settings is None:
        return [("WWW-Authenticate", "Bearer")] if failure.http_status == 401 else []
    if failure.http_status == 403 and failure.reason != _INSUFFICIENT_SCOPE:
        return []  # an API key that may not call the network: no token would help
    return [("WWW-Authenticate", bearer_challenge(settings, path, failure.reason))]


def bearer_challenge(settings: OAuthSettings, path: str, reason: str | None) -> str:
    parts = [f'resource_metadata="{metadata_url(settings, path)}"', f'scope="{DEFAULT_SCOPE}"']
    if reason == _INVALID_TOKEN:
        parts.insert(0, 'error="invalid_token"')
    elif reason == _INSUFFICIENT_SCOPE:
        parts.insert(0, 'error="insufficient_scope"')
    return "Bearer " + ", ".join(parts)


class ResourceMetadataFrontEnd:
    """Serves the RFC 9728 documents (only mounted when an issuer is configured)."""

    def __init__(self, context: FrontEndContext, settings: OAuthSettings) -> None:
        self._settings = settings

    def routes(self) -> Iterable[FrontEndRoute]:
        return [
            FrontEndRoute("GET", METADATA_PATH, "oauth_resource_metadata", self._server),
            FrontEndRoute("GET", METADATA_PATH + MCP_RESOURCE_PATH, "oauth_resource_metadata", self._mcp),
        ]

    async def close(self) -> None:
        return None

    async def _server(self, request: web.Request, _: dict[str, str], _body: bytes) -> web.StreamResponse:
        return _document(protected_resource_metadata(self._settings))

    async def _mcp(self, request: web.Request, _: dict[str, str], _body: bytes) -> web.StreamResponse:
        return _document(protected_resource_metadata(self._settings, MCP_RESOURCE_PATH))


def _document(body: Mapping[str, object]) -> web.Response:
    # Browser-based hosts read it cross-origin: it is public by design.
    return web.Response(status=200, body=json.dumps(body).encode(), content_type="application/json",
                        headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "public, max-age=3600"})


def oauth_frontends(env: Mapping[str, str] | None = None) -> list[FrontEndFactory]:
    """The metadata front-end when ``AGENT_OAUTH_ISSUER`` is set, else none; raises
    ConfigurationError for settings that cannot work (called at start)."""
    settings = OAuthSettings.from_env(process_env() if env is None else env)
    if settings is None:
        return []
    return [lambda context: ResourceMetadataFrontEnd(context, settings)]
