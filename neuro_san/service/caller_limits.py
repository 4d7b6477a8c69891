"""Who the caller is for rate limits, and the limiter's Prometheus counter.

The caller is the API key (as its hash) or, with keys off, the client's address: the
gRPC peer's host, or for HTTP through the in-process gateway the ``x-neuro-san-client``
metadata the gateway sets (trusted only from the in-process gateway, whose calls have
the peer ``local:in-process``; a gRPC client cannot forge it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter

from neuro_san.core.access import ANYONE, Principal
from neuro_san.core.internal_metadata import CLIENT_ADDRESS_KEY, IN_PROCESS_PEER
from neuro_san.core.rate_limits import CallerLimits

DECISIONS = Counter(
    "neuro_san_rate_limit_decisions",
    "Chats allowed and refused by the per-caller rate limiter, by caller (a hash, never the key).",
    ["caller", "outcome"],
)


def caller_of(
    principal: Principal | None, peer: str, metadata: Iterable[tuple[str, Any]]
) -> tuple[str, CallerLimits | None]:
    """(caller id, the caller's own limits or None for the defaults)."""
    if principal is not None and principal is not ANYONE and principal.key_id:
        return f"key:{principal.key_id}", principal.limits
    address = _host_of(peer)
    if peer == IN_PROCESS_PEER:
        for key, value in metadata:  # the last one: the gateway appends its own after the client's
            if key == CLIENT_ADDRESS_KEY and isinstance(value, str) and value:
                address = value
    return f"addr:{address}", None


def _host_of(peer: str) -> str:
    """``ipv4:1.2.3.4:5678`` → ``1.2.3.4``; ``ipv6:[::1]:5678`` → ``::1``."""
    _, _, rest = peer.partition(":")
    host = rest.rpartition(":")[0] if rest.count(":") >= 1 and not rest.startswith("[") else rest
    if rest.startswith("["):
        host = rest[1 : rest.find("]")]
    return host or peer


def metric_label(caller: str) -> str:
    """A key's label is its hash (key ids are hashes already). Client addresses are all
    counted under one label: one per address would let a client that changes address grow
    the metrics without bound (and would publish who calls)."""
    return caller if caller.startswith("key:") else "address"


def count_decision(caller: str, allowed: bool) -> None:
    DECISIONS.labels(metric_label(caller), "allowed" if allowed else "refused").inc()
