"""Who may call which agent network: API keys and per-agent rules.

Off unless keys are configured. With keys, every call must carry one
(``authorization: Bearer <key>`` or ``x-api-key: <key>``, as gRPC metadata or HTTP
headers); a key names the networks it may call with glob patterns. ``*`` (the default)
covers the public networks; a private network (``public: false`` in the manifest) is
reachable only by a key whose patterns name it without relying on ``*`` alone, and it is
listed only to such keys.

Keys come from a file (``AGENT_API_KEYS_FILE``; YAML or JSON)::

    keys:
      - name: reporting           # shown in logs, never the key itself
        key: "…"                  # or key_sha256: "<hex digest>", to keep files secret-free
        agents: ["hello_world", "deep/*"]
        limits: {chats: 30, period_seconds: 60, concurrent_chats: 2}   # optional, see rate_limits.py

or from ``AGENT_API_KEYS`` (``key1,key2``: each may call every public network).
Keys are compared as SHA-256 digests with ``hmac.compare_digest`` against every
configured key, so timing reveals neither a key nor which one matched.

OAuth 2.1 access tokens (``AGENT_OAUTH_ISSUER``, see :mod:`neuro_san.service.oauth`) come
in the same ``authorization: Bearer`` and obey the same rule: a token's scopes
``agent:<pattern>`` are its ``agents`` patterns (``agent:*`` the public networks,
``agent:deep/*`` also the private ``deep/…`` ones), so :meth:`Principal.may_call` decides
for keys and tokens alike. A credential that matches no key is tried as a token.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from neuro_san.core.errors import (
    AgentNotFound,
    ConfigurationError,
    InsufficientScope,
    PermissionDenied,
    Unauthenticated,
    clip,
    echo,
)
from neuro_san.core.rate_limits import CallerLimits

#: An OAuth scope naming networks: ``agent:<pattern>``, a pattern as in a key's ``agents``.
SCOPE_PREFIX = "agent:"
#: The scope that covers every public network (what a host asks for by default).
DEFAULT_SCOPE = SCOPE_PREFIX + "*"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller."""

    name: str
    agents: tuple[str, ...] = ("*",)
    #: The key's own rate limits (``limits`` in the keys file); None: the defaults.
    limits: CallerLimits | None = None
    #: A hash of the key, safe for metrics and logs (never the key or its digest).
    key_id: str = ""
    #: Authenticated by an OAuth access token (its refusals name the scope it lacks).
    oauth: bool = False

    def may_call(self, agent: str, public: bool) -> bool:
        for pattern in self.agents:
            if pattern == "*":
                if public:
                    return True
            elif fnmatch.fnmatchcase(agent, pattern):
                return True
        return False


#: The caller when access control is off: may call everything, as upstream.
ANYONE = Principal("anonymous", ("*", "**"))


@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a validated access token says about its bearer."""

    subject: str
    scopes: tuple[str, ...]
    client_id: str = ""


class TokenVerifier(Protocol):
    """Validates an OAuth access token (:class:`neuro_san.service.oauth.JwtVerifier`)."""

    def looks_like_token(self, credential: str) -> bool:
        """Whether ``credential`` is worth validating as a token (a JWT's shape)."""
        ...

    async def verify(self, token: str) -> TokenClaims:
        """The token's claims; raises InvalidToken (or UpstreamUnavailable without keys)."""
        ...


def principal_for_token(claims: TokenClaims) -> Principal:
    """The caller a token names: its ``agent:`` scopes are its patterns (no scope, no network)."""
    patterns = tuple(scope[len(SCOPE_PREFIX):] for scope in claims.scopes if scope.startswith(SCOPE_PREFIX))
    who = claims.subject or claims.client_id or "unknown"
    return Principal(f"oauth:{who}", tuple(p for p in patterns if p), None,
                     hashlib.sha256(b"neuro-san oauth subject:" + who.encode()).hexdigest()[:12], oauth=True)


@dataclass(frozen=True, slots=True)
class _Key:
    digest: bytes
    principal: Principal


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def _key_id(digest: bytes) -> str:
    return hashlib.sha256(b"neuro-san key id:" + digest).hexdigest()[:12]


class AccessPolicy:
    def __init__(self, keys: Sequence[_Key] = (), tokens: TokenVerifier | None = None) -> None:
        self._keys = tuple(keys)
        self._tokens = tokens

    @property
    def enabled(self) -> bool:
        return bool(self._keys) or self._tokens is not None

    @property
    def keys_have_limits(self) -> bool:
        """True when a key of the keys file has ``limits`` of its own that cap something."""
        return any(key.principal.limits is not None and key.principal.limits.limits_anything for key in self._keys)

    def with_tokens(self, tokens: TokenVerifier | None) -> AccessPolicy:
        """The same keys, and OAuth access tokens validated by ``tokens``."""
        return AccessPolicy(self._keys, tokens)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AccessPolicy:
        keys: list[_Key] = []
        for n, secret in enumerate(s.strip() for s in env.get("AGENT_API_KEYS", "").split(",")):
            if secret:
                digest = _digest(secret)
                keys.append(_Key(digest, Principal(f"key-{n + 1}", key_id=_key_id(digest))))
        path = env.get("AGENT_API_KEYS_FILE", "").strip()
        if path:
            keys.extend(_read_keys_file(Path(path)))
        return cls(keys)

    def authenticate(self, credentials: Iterable[str]) -> Principal:
        """The principal of the first credential that is a configured key; raises
        Unauthenticated. (Keys only: :meth:`identify` also validates OAuth tokens.)"""
        if not self.enabled:
            return ANYONE
        for credential in credentials:
            found = self._key(credential)
            if found is not None:
                return found
        raise Unauthenticated(self._wanted())

    async def identify(self, credentials: Iterable[str]) -> Principal:
        """The principal of the first credential that is a configured key or, with OAuth
        on, a valid access token; raises Unauthenticated (InvalidToken for a token that
        is not valid here: its reason, never the token)."""
        if not self.enabled:
            return ANYONE
        refused: Unauthenticated | None = None
        for credential in credentials:
            found = self._key(credential)
            if found is not None:
                return found
            if self._tokens is not None and self._tokens.looks_like_token(credential):
                try:
                    principal = principal_for_token(await self._tokens.verify(credential))
                except Unauthenticated as error:
                    refused = refused or error
                    continue
                if not principal.agents:  # valid, but for nothing here: say which scope to ask for
                    raise InsufficientScope(f"this access token grants no {SCOPE_PREFIX} scope: ask for "
                                            f"{DEFAULT_SCOPE} (or {SCOPE_PREFIX}<network pattern>)", DEFAULT_SCOPE)
                return principal
        raise refused or Unauthenticated(self._wanted())

    def _key(self, credential: str) -> Principal | None:
        digest = _digest(credential)
        found = None
        for key in self._keys:  # no early exit: every key is compared
            if hmac.compare_digest(digest, key.digest) and found is None:
                found = key.principal
        return found

    def _wanted(self) -> str:
        if self._tokens is not None and self._keys:
            return "this server requires an OAuth access token or an API key: send 'authorization: Bearer <token>'"
        if self._tokens is not None:
            return "this server requires an OAuth access token: send 'authorization: Bearer <token>'"
        return "this server requires an API key: send 'authorization: Bearer <key>' (or 'x-api-key')"

    def check(self, principal: Principal, agent: str, public: bool) -> None:
        """Raise unless ``principal`` may call ``agent``. A private network the caller may
        not see is reported as not found, so its existence is not disclosed."""
        if principal is ANYONE or principal.may_call(agent, public):
            return
        if not public:
            raise AgentNotFound(agent)
        if principal.oauth:
            scope = SCOPE_PREFIX + agent
            raise InsufficientScope(f"this access token's scopes do not cover agent {echo(agent)} (needs {clip(scope)} "
                                    f"or {DEFAULT_SCOPE})", DEFAULT_SCOPE)
        raise PermissionDenied(f"this API key ({principal.name}) may not call agent {echo(agent)}")


#: Request metadata with which a front-end (MCP, A2A) asks for the rule of protocol
#: front-ends: a private network is not there unless the caller's key names it.
PRIVATE_NAMED_ONLY_METADATA_KEY = "neuro-san-private-named-only"


def private_named_only(metadata: Iterable[tuple[str, Any]]) -> bool:
    return any(key == PRIVATE_NAMED_ONLY_METADATA_KEY and value == "true" for key, value in metadata)


def exposed(principal: Principal, agent: str, public: bool, *, named_only: bool) -> bool:
    """Whether ``agent`` exists for ``principal`` at all.

    The one rule for private networks (``public: false``). Over REST and gRPC, as in
    neuro-san, a private network is unlisted but callable by name (``named_only`` false).
    On the protocol front-ends that publish networks to other agents (MCP, A2A:
    ``named_only``), it is not exposed unless the caller's API key names it: with keys
    off, or a key whose patterns reach only public networks, it does not exist there.
    """
    if public or not named_only:
        return True
    return principal is not ANYONE and principal.may_call(agent, public)


#: Request metadata with which a front-end reads the public directory without credentials:
#: the description (Function) and listing (List) of *public* networks, what A2A Agent Cards
#: publish to anyone so that a client can learn how to authenticate. Nothing else is
#: answered without credentials: a private network is not there, a chat needs a key or token.
PUBLIC_DIRECTORY_METADATA_KEY = "neuro-san-public-directory"


def public_directory(metadata: Iterable[tuple[str, Any]]) -> bool:
    return any(key == PUBLIC_DIRECTORY_METADATA_KEY and value == "true" for key, value in metadata)


def credentials_from_metadata(metadata: Iterable[tuple[str, Any]]) -> list[str]:
    """API keys offered in request metadata / headers (lower-case keys)."""
    found = []
    for key, value in metadata:
        if not isinstance(value, str):
            continue
        if key == "authorization":
            scheme, _, token = value.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                found.append(token.strip())
        elif key == "x-api-key" and value.strip():
            found.append(value.strip())
    return found


def _read_keys_file(path: Path) -> list[_Key]:
    import yaml  # only for a YAML keys file, not at every start-up

    try:
        text = path.read_text(encoding="utf-8")
        document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ConfigurationError(f"{path}: cannot read API keys: {error}") from error
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ConfigurationError(f"{path}: expected a top-level 'keys' list")
    keys = []
    for n, entry in enumerate(entries):
        where = f"{path}: keys[{n}]"
        if not isinstance(entry, dict):
            raise ConfigurationError(f"{where}: expected a mapping")
        if isinstance(entry.get("key"), str) and entry["key"]:
            digest = _digest(entry["key"])
        elif isinstance(entry.get("key_sha256"), str):
            try:
                digest = bytes.fromhex(entry["key_sha256"])
            except ValueError as error:
                raise ConfigurationError(f"{where}: key_sha256 is not hex") from error
        else:
            raise ConfigurationError(f"{where}: needs 'key' or 'key_sha256'")
        agents = entry.get("agents", ["*"])
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            raise ConfigurationError(f"{where}: 'agents' must be a list of names or patterns")
        limits = CallerLimits.parse(where, entry["limits"]) if "limits" in entry else None
        name = str(entry.get("name", f"key-{n + 1}"))
        keys.append(_Key(digest, Principal(name, tuple(agents), limits, _key_id(digest))))
    return keys
