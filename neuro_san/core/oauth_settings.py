"""OAuth settings (``AGENT_OAUTH_ISSUER``, ``AGENT_OAUTH_AUDIENCE``): read and checked once,
shared by the service (which validates tokens, :mod:`neuro_san.service.oauth`) and the HTTP
port (which publishes the RFC 9728 metadata and the ``WWW-Authenticate`` challenges).
Configuration only: nothing here fetches or validates anything."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from neuro_san.core.errors import ConfigurationError

#: Path of the MCP endpoint, whose path-suffixed resource is an accepted audience too.
MCP_RESOURCE_PATH = "/mcp"


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    issuer: str
    audience: str

    @property
    def audiences(self) -> tuple[str, ...]:
        return (self.audience, self.audience.rstrip("/") + MCP_RESOURCE_PATH)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OAuthSettings | None:
        """None without ``AGENT_OAUTH_ISSUER``; raises ConfigurationError for what cannot work."""
        issuer = env.get("AGENT_OAUTH_ISSUER", "").strip()
        audience = env.get("AGENT_OAUTH_AUDIENCE", "").strip()
        if not issuer:
            if audience:
                raise ConfigurationError("AGENT_OAUTH_AUDIENCE is set but AGENT_OAUTH_ISSUER is not: without an "
                                         "issuer no access token can be validated")
            return None
        _require_url("AGENT_OAUTH_ISSUER", issuer)
        if not audience:
            raise ConfigurationError(
                "AGENT_OAUTH_ISSUER is set but AGENT_OAUTH_AUDIENCE is not: set it to this server's public URL "
                "(e.g. https://agents.example.com), the resource its tokens are issued for; the server cannot "
                "know that URL itself behind proxies and TLS termination"
            )
        _require_url("AGENT_OAUTH_AUDIENCE", audience)
        audience = audience.rstrip("/")
        # The MCP resource URL (``https://host/mcp``) is what MCP clients show, so it is a
        # natural thing to paste here; the audience names the server base (the MCP resource
        # and the metadata paths are derived from it), so that form is normalised to the base.
        if urlsplit(audience).path.endswith(MCP_RESOURCE_PATH):
            audience = audience[: -len(MCP_RESOURCE_PATH)].rstrip("/")
        return cls(issuer, audience)


def _require_url(name: str, value: str) -> None:
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and _loopback(parts.hostname):
        return  # a local test or development set-up; anything else must be https (OAuth 2.1)
    raise ConfigurationError(f"{name} must be an https URL (http only on loopback), got {value!r}")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414 (well-known before the path), then
    OpenID Connect discovery (appended), as MCP clients look for it."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}", f"{issuer.rstrip('/')}/.well-known/openid-configuration"]
