"""OAuth 2.1 access tokens: this server as a resource server (MCP authorization, RFC 9068).

Configured by ``AGENT_OAUTH_ISSUER`` (the authorization server's issuer URL) and
``AGENT_OAUTH_AUDIENCE`` (this server's canonical URL, the RFC 8707 resource a token must
be issued for). Tokens are JWTs validated locally with PyJWT (signature, ``iss``, ``aud``,
``exp``, ``nbf``) against the issuer's JWKS, found through its metadata (RFC 8414, else
OpenID Connect discovery), cached, and fetched again when a token names a key id the cache
does not have (the issuer rotated its keys), at most once per
:data:`MIN_REFRESH_SECONDS` so that tokens with made-up key ids cannot make us hammer the
issuer. A token is only ever read here: it is never forwarded to an LLM, a tool or an
external agent (the forwarded request metadata never includes ``authorization``).

Audiences accepted: the configured one and, since the MCP endpoint publishes its own
path-suffixed resource metadata (RFC 9728 §3.1), that URL followed by ``/mcp``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.request
from collections.abc import Mapping
from typing import Any

import jwt

from neuro_san.core.access import TokenClaims
from neuro_san.core.errors import InvalidToken, UpstreamUnavailable
from neuro_san.core.oauth_settings import OAuthSettings, metadata_urls

log = logging.getLogger(__name__)

#: Signature algorithms accepted: asymmetric only (a shared secret would let anyone who
#: can validate tokens also mint them; ``none`` is never accepted).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
#: Clock skew tolerated on ``exp`` / ``nbf``.
LEEWAY_SECONDS = 5
#: A cached key set is fetched again after this long, rotation or not.
JWKS_TTL_SECONDS = 3600.0
#: Fetching again for an unknown key id waits at least this long after the last fetch.
MIN_REFRESH_SECONDS = 2.0
_FETCH_TIMEOUT = 10.0
_MAX_DOCUMENT_BYTES = 1 << 20
_UNREACHABLE = "cannot validate access tokens now: the authorization server's keys cannot be fetched"
class JwtVerifier:
    """Validates access tokens of one issuer for this server's audiences."""

    def __init__(self, settings: OAuthSettings) -> None:
        self.settings = settings
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = -1e9  # the last fetch that worked (the cache's age)
        self._attempted_at = -1e9  # the last fetch tried (the pace of fetching)
        self._jwks_uri: str | None = None
        self._lock = asyncio.Lock()

    def looks_like_token(self, credential: str) -> bool:
        return credential.count(".") == 2

    async def verify(self, token: str) -> TokenClaims:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the access token is not a well-formed JWT") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in ALGORITHMS:
            raise InvalidToken(f"the access token's algorithm {str(algorithm)[:20]!r} is not accepted")
        key = await self._key(kid if isinstance(kid, str) else "")
        try:
            claims = jwt.decode(
                token, key, algorithms=[algorithm], audience=list(self.settings.audiences),
                issuer=self.settings.issuer, leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the access token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the access token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken(f"the access token was not issued for this server ({self.settings.audience})") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the access token comes from another issuer") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the access token's signature is not valid") from None
        except jwt.PyJWTError as error:
            raise InvalidToken(f"the access token is not valid: {type(error).__name__}") from None
        return TokenClaims(str(claims.get("sub") or ""), _scopes(claims), str(claims.get("client_id") or ""))

    async def _key(self, kid: str) -> jwt.PyJWK:
        """The issuer's key ``kid`` (a key set with one key and no ids: that key)."""
        found = self._pick(kid)
        if found is None or time.monotonic() - self._fetched_at > JWKS_TTL_SECONDS:
            async with self._lock:  # one fetch for the many calls that arrive together
                now = time.monotonic()
                wanted = self._pick(kid) is None or now - self._fetched_at > JWKS_TTL_SECONDS
                if wanted and now - self._attempted_at >= MIN_REFRESH_SECONDS:
                    await self._refresh()
            found = self._pick(kid)
        if not self._keys:  # the issuer's keys could not be fetched yet: not the token's fault
            raise UpstreamUnavailable(_UNREACHABLE)
        if found is None:
            raise InvalidToken("the access token is signed with a key the issuer does not publish")
        return found

    def _pick(self, kid: str) -> jwt.PyJWK | None:
        if kid:
            return self._keys.get(kid)
        return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    async def _refresh(self) -> None:
        self._attempted_at = time.monotonic()
        try:
            if self._jwks_uri is None:
                self._jwks_uri = await asyncio.to_thread(_discover_jwks_uri, self.settings.issuer)
            document = await asyncio.to_thread(_fetch_json, self._jwks_uri)
            keys = jwt.PyJWKSet.from_dict(document).keys
        except (OSError, ValueError, jwt.PyJWTError) as error:
            log.warning("cannot fetch the signing keys of %s: %s", self.settings.issuer, error)
            return  # keep the keys we have (none: the caller says the issuer is unreachable)
        self._keys = {key.key_id or f"#{n}": key for n, key in enumerate(keys)}
        self._fetched_at = time.monotonic()
        log.info("fetched %d signing key(s) of %s", len(self._keys), self.settings.issuer)


def _scopes(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """RFC 9068's ``scope`` (space-separated), or the ``scp`` list some issuers use."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return tuple(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list):
        return tuple(str(s) for s in scp)
    return ()


def issuer_metadata(issuer: str) -> tuple[str, dict[str, Any]]:
    """(where it was found, the issuer's metadata); blocking (call it in a thread). Raises
    ValueError (or OSError) when no well-known place has metadata of this issuer."""
    failures = []
    for url in dict.fromkeys(metadata_urls(issuer)):
        try:
            document = _fetch_json(url)
        except (OSError, ValueError) as error:
            failures.append(f"{url}: {error}")
            continue
        if document.get("issuer") != issuer:  # RFC 8414 §3.3: metadata of another issuer is not this one's
            failures.append(f"{url}: names issuer {document.get('issuer')!r}")
            continue
        return url, document
    raise ValueError("no usable authorization server metadata: " + "; ".join(failures))


def _discover_jwks_uri(issuer: str) -> str:
    url, document = issuer_metadata(issuer)
    uri = document.get("jwks_uri")
    if isinstance(uri, str) and uri:
        return uri
    raise ValueError(f"{url}: no jwks_uri")


def _fetch_json(url: str) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=_FETCH_TIMEOUT) as response:  # noqa: S310 - https or loopback
        raw = response.read(_MAX_DOCUMENT_BYTES + 1)
    if len(raw) > _MAX_DOCUMENT_BYTES:
        raise ValueError(f"{url}: document larger than {_MAX_DOCUMENT_BYTES} bytes")
    document = json.loads(raw)
    if not isinstance(document, dict):
        raise ValueError(f"{url}: not a JSON object")
    return document
