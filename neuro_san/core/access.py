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
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuro_san.core.errors import AgentNotFound, ConfigurationError, PermissionDenied, Unauthenticated
from neuro_san.core.rate_limits import CallerLimits


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller."""

    name: str
    agents: tuple[str, ...] = ("*",)
    #: The key's own rate limits (``limits`` in the keys file); None: the defaults.
    limits: CallerLimits | None = None
    #: A hash of the key, safe for metrics and logs (never the key or its digest).
    key_id: str = ""

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
class _Key:
    digest: bytes
    principal: Principal


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def _key_id(digest: bytes) -> str:
    return hashlib.sha256(b"neuro-san key id:" + digest).hexdigest()[:12]


class AccessPolicy:
    def __init__(self, keys: Sequence[_Key] = ()) -> None:
        self._keys = tuple(keys)

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

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
        """The principal for the first usable credential; raises Unauthenticated."""
        if not self._keys:
            return ANYONE
        for credential in credentials:
            digest = _digest(credential)
            found = None
            for key in self._keys:  # no early exit: every key is compared
                if hmac.compare_digest(digest, key.digest) and found is None:
                    found = key.principal
            if found is not None:
                return found
        raise Unauthenticated(
            "this server requires an API key: send 'authorization: Bearer <key>' (or 'x-api-key')"
        )

    def check(self, principal: Principal, agent: str, public: bool) -> None:
        """Raise unless ``principal`` may call ``agent``. A private network the caller may
        not see is reported as not found, so its existence is not disclosed."""
        if principal is ANYONE or principal.may_call(agent, public):
            return
        if not public:
            raise AgentNotFound(agent)
        raise PermissionDenied(f"this API key ({principal.name}) may not call agent {agent!r}")


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
