"""The request metadata keys the server uses internally, and the one rule that keeps them so.

The front-ends on the HTTP port tell the service layer facts a client must never assert:
"this is the public directory, answer without credentials" (A2A cards),
"a private network is absent unless the key names it" (MCP, A2A),
"the HTTP client's address is …" (per-address rate limits), "this chat_context is a history the
client owns, not one this server signed" (OpenAI, AG-UI). They travel as request metadata,
so they are internal by construction:

- at the HTTP edge, :class:`gateway.host.metadata.HeaderMapper` never turns a header into one of
  these keys (``Grpc-Metadata-<key>`` or a forwarded name alike), nor into ``agent-name``, which
  on HTTP only the gateway sets (from the path or the front-end's own routing);
- at the gRPC edge, the service layer reads a call's metadata through :func:`inbound_metadata`,
  which keeps the privileged ones (:data:`PRIVILEGED_METADATA_KEYS`: the public directory, the
  client's address) only on a call of the in-process gateway (peer ``local:in-process``, which
  the in-process invoker's context reports and no network client can claim) and drops them from
  every other call. A raw gRPC client that sends them is served as if it had not. The keys that
  only narrow the caller's own view pass, so a standalone gateway's calls still apply them.

When the gateway of ``neuro-san serve`` calls over gRPC (``AGENT_GATEWAY_INVOKER=grpc``, its
private socket), the peer is a socket, so its calls carry :data:`INTERNAL_TOKEN_KEY` with this
process's random token (:func:`internal_token`), added by the invoker's channel: the service
believes internal keys on a call bearing it. The token never leaves the process but on that
channel, and the HTTP edge never forwards the key. A standalone ``neuro-san gateway`` (another
process) has another token, so its front-ends are served as an ordinary client's, unless the
operator gives the server and its gateways one shared secret, ``AGENT_INTERNAL_TOKEN`` (at least
32 characters; :func:`load_shared_token`): then the gateway sends it and the server believes it.
It then crosses the network on the gateway's channel, so that channel should be TLS.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from neuro_san.core.access import PRIVATE_NAMED_ONLY_METADATA_KEY, PUBLIC_DIRECTORY_METADATA_KEY

#: Metadata the in-process gateway sets to the HTTP client's address.
CLIENT_ADDRESS_KEY = "x-neuro-san-client"
#: The peer of every call the in-process invoker makes (``LocalContext.peer()``).
IN_PROCESS_PEER = "local:in-process"
#: The agent a call names (gRPC clients send it; over HTTP the gateway alone sets it).
AGENT_NAME_KEY = "agent-name"

#: "This request's chat_context is a history the client owns" (OpenAI, AG-UI): restored
#: without a signature (``ChatRequest.client_history``), so only the server's own front-ends
#: may say it (a privileged key).
CLIENT_HISTORY_KEY = "neuro-san-client-history"

#: "Leave out of this MAXIMAL stream what the server's own front-ends drop", as a
#: comma-separated list: ``inputs``, the SYSTEM and HUMAN messages (each agent's
#: instructions and input, echoed) and the request echoed on every response
#: (``ChatRequest.echo_inputs``); ``agent-usage``, every token report but the request's
#: total (``ChatRequest.agent_usage``). A one-agent answer is then three messages instead of
#: six. Privileged, so that no other client's MAXIMAL stream ever differs from neuro-san's;
#: a call that may not send it gets the whole stream.
LEAN_STREAM_KEY = "neuro-san-lean-stream"
LEAVE_OUT_INPUTS = "inputs"
LEAVE_OUT_AGENT_USAGE = "agent-usage"

#: Carries this process's token on the gateway's own calls over a gRPC hop.
INTERNAL_TOKEN_KEY = "neuro-san-internal-token"
#: A secret shared by a server and its standalone gateways (see the module's docstring).
SHARED_TOKEN_SETTING = "AGENT_INTERNAL_TOKEN"
_MIN_SHARED_TOKEN_CHARS = 32
#: Random per process (a worker of ``serve --workers`` has its own, as it has its own socket),
#: unless AGENT_INTERNAL_TOKEN replaces it at start-up.
_PROCESS_TOKEN = secrets.token_hex(32)
_SHARED = False

#: Every key only the server's own front-ends may set.
INTERNAL_METADATA_KEYS = frozenset(
    {PUBLIC_DIRECTORY_METADATA_KEY, PRIVATE_NAMED_ONLY_METADATA_KEY, CLIENT_ADDRESS_KEY, INTERNAL_TOKEN_KEY,
     CLIENT_HISTORY_KEY, LEAN_STREAM_KEY}
)
#: What an HTTP client may not set by a header: the internal keys and the agent's name.
GATEWAY_OWNED_KEYS = INTERNAL_METADATA_KEYS | {AGENT_NAME_KEY}
#: The internal keys that grant something (an answer without credentials, another client's
#: address for the limits, an unsigned chat_context believed), which a gRPC call must prove it
#: may send. The others only narrow what the caller itself sees (private networks hidden), so a
#: raw gRPC client, or a standalone gateway in another process, may send them.
PRIVILEGED_METADATA_KEYS = frozenset(
    {PUBLIC_DIRECTORY_METADATA_KEY, CLIENT_ADDRESS_KEY, INTERNAL_TOKEN_KEY, CLIENT_HISTORY_KEY, LEAN_STREAM_KEY}
)


def client_history(metadata: Iterable[tuple[str, Any]]) -> bool:
    """Whether the (already :func:`inbound_metadata`-filtered) metadata says the chat_context
    is a client-owned history."""
    return _says(metadata, CLIENT_HISTORY_KEY)


def left_out(metadata: Iterable[tuple[str, Any]]) -> frozenset[str]:
    """What the (already :func:`inbound_metadata`-filtered) metadata asks a MAXIMAL stream to
    leave out (:data:`LEAN_STREAM_KEY`); words it does not know mean nothing."""
    for name, value in metadata:
        if str(name).lower() == LEAN_STREAM_KEY and isinstance(value, str):
            return frozenset(word.strip() for word in value.split(","))
    return frozenset()


def _says(metadata: Iterable[tuple[str, Any]], key: str) -> bool:
    return any(str(name).lower() == key and value == "true" for name, value in metadata)


def inbound_metadata(metadata: Iterable[tuple[str, Any]] | None, peer: str | None) -> tuple[tuple[str, Any], ...]:
    """A call's metadata as the service may trust it: privileged keys only from this process's gateway."""
    pairs = tuple(metadata or ())
    if peer == IN_PROCESS_PEER:
        return pairs
    if any(_is_our_token(key, value) for key, value in pairs):
        return tuple(pair for pair in pairs if str(pair[0]).lower() != INTERNAL_TOKEN_KEY)
    return tuple(pair for pair in pairs if str(pair[0]).lower() not in PRIVILEGED_METADATA_KEYS)


def from_own_gateway(metadata: Iterable[tuple[str, Any]] | None, peer: str | None) -> bool:
    """Whether a call comes from this process's gateway (in-process, or bearing our token):
    the callers whose privileged requests (metadata, or a request field such as
    DirectoryRequest.public_directory) the service believes."""
    return peer == IN_PROCESS_PEER or any(_is_our_token(key, value) for key, value in metadata or ())


def internal_token() -> str:
    """This process's token, for the gateway's channel to its own server's private socket."""
    return _PROCESS_TOKEN


def load_shared_token(env: Mapping[str, str]) -> bool:
    """At start-up: use ``AGENT_INTERNAL_TOKEN`` as this process's token when it is set (True).
    A short secret is refused (ValueError), never used."""
    global _PROCESS_TOKEN, _SHARED
    value = env.get(SHARED_TOKEN_SETTING, "").strip()
    if not value:
        return False
    if len(value) < _MIN_SHARED_TOKEN_CHARS:
        raise ValueError(
            f"{SHARED_TOKEN_SETTING} must be at least {_MIN_SHARED_TOKEN_CHARS} characters "
            f"(it has {len(value)}): it lets a caller act as the server's own gateway"
        )
    _PROCESS_TOKEN, _SHARED = value, True
    return True


def shares_token() -> bool:
    """Whether AGENT_INTERNAL_TOKEN was loaded (a standalone gateway then sends it)."""
    return _SHARED


def _is_our_token(key: Any, value: Any) -> bool:
    if str(key).lower() != INTERNAL_TOKEN_KEY or not isinstance(value, str):
        return False
    return hmac.compare_digest(value.encode(), _PROCESS_TOKEN.encode())
