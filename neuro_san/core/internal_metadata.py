"""The request metadata keys the server uses internally, and the one rule that keeps them so.

The front-ends on the HTTP port tell the service layer facts a client must never assert:
"this is the public directory, answer without credentials" (A2A cards),
"a private network is absent unless the key names it" (MCP, A2A), "list only the MCP tools",
"the HTTP client's address is …" (per-address rate limits). They travel as request metadata,
so they are internal by construction:

- at the HTTP edge, :class:`gateway.host.metadata.HeaderMapper` never turns a header into one of
  these keys (``Grpc-Metadata-<key>`` or a forwarded name alike), nor into ``agent-name``, which
  on HTTP only the gateway sets (from the path or the front-end's own routing);
- at the gRPC edge, the service layer reads a call's metadata through :func:`inbound_metadata`,
  which keeps these keys only on a call of the in-process gateway (peer ``local:in-process``,
  which the in-process invoker's context reports and no network client can claim) and drops
  them from every other call. A raw gRPC client that sends them is served as if it had not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from neuro_san.core.access import PRIVATE_NAMED_ONLY_METADATA_KEY, PUBLIC_DIRECTORY_METADATA_KEY
from neuro_san.core.mcp_listing import MCP_LISTING_METADATA_KEY

#: Metadata the in-process gateway sets to the HTTP client's address.
CLIENT_ADDRESS_KEY = "x-neuro-san-client"
#: The peer of every call the in-process invoker makes (``LocalContext.peer()``).
IN_PROCESS_PEER = "local:in-process"
#: The agent a call names (gRPC clients send it; over HTTP the gateway alone sets it).
AGENT_NAME_KEY = "agent-name"

#: Every key only the server's own front-ends may set.
INTERNAL_METADATA_KEYS = frozenset(
    {PUBLIC_DIRECTORY_METADATA_KEY, PRIVATE_NAMED_ONLY_METADATA_KEY, MCP_LISTING_METADATA_KEY, CLIENT_ADDRESS_KEY}
)
#: What an HTTP client may not set by a header: the internal keys and the agent's name.
GATEWAY_OWNED_KEYS = INTERNAL_METADATA_KEYS | {AGENT_NAME_KEY}


def inbound_metadata(metadata: Iterable[tuple[str, Any]] | None, peer: str | None) -> tuple[tuple[str, Any], ...]:
    """A call's metadata as the service may trust it: internal keys only from the in-process gateway."""
    pairs = tuple(metadata or ())
    if peer == IN_PROCESS_PEER:
        return pairs
    return tuple(pair for pair in pairs if str(pair[0]).lower() not in INTERNAL_METADATA_KEYS)
