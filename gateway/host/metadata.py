"""HTTP headers ⇄ gRPC metadata, and ``Grpc-Timeout`` → the call's deadline.

In (our policy, written down):

- ``Grpc-Metadata-<Key>: v`` → ``<key>: v`` (the generic pass-through).
- ``Authorization`` → ``authorization``, ``X-Api-Key`` → ``x-api-key`` (the credentials gRPC takes).
- Each header named in ``forwarded_headers`` (neuro-san's
  ``AGENT_FORWARDED_REQUEST_METADATA``, e.g. ``request_id user_id``) → that name,
  lower-cased.
- ``Traceparent`` / ``Tracestate`` (W3C trace context) → ``traceparent`` / ``tracestate``,
  always, so a traced server continues the caller's trace.
- Everything else is not forwarded, and never, by any of these spellings, a key the server
  uses internally or ``agent-name`` (:data:`neuro_san.core.internal_metadata.GATEWAY_OWNED_KEYS`):
  on HTTP only the gateway sets those, so ``Grpc-Metadata-Neuro-San-Public-Directory`` is dropped.

Python gRPC fails the *whole call* on an upper-case key, a non-ASCII value or a ``str``
for a ``-bin`` key, so keys are lower-cased, keys outside ``[0-9a-z_.-]`` and
transport/reserved keys are dropped, values that are not printable ASCII are dropped,
and ``-bin`` values are base64-decoded (padded or not, standard or URL-safe) to bytes;
a bad one is 400.

Out: response initial metadata → ``Grpc-Metadata-<key>`` headers (``-bin`` values
base64-encoded), unary trailing metadata → ``Grpc-Trailer-<key>``; transport keys
(``content-type``, ``grpc-*``, ``te``, ``user-agent``...) are never echoed.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping

from gateway.host.errors import GatewayError, bad_request
from neuro_san.core.errors import Code, echo
from neuro_san.core.internal_metadata import GATEWAY_OWNED_KEYS
from neuro_san.core.request_ids import client_request_id, new_request_id, sane_request_id

MetadataValue = str | bytes
Metadata = list[tuple[str, MetadataValue]]

_METADATA_PREFIX = "grpc-metadata-"
#: Forwarded whatever ``forwarded_headers`` says: what the service authenticates with.
_CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key"})
#: W3C trace context headers: forwarded whatever ``forwarded_headers`` says.
TRACE_HEADERS = ("traceparent", "tracestate")
_VALID_KEY = re.compile(r"^[0-9a-z_.\-]+$")
_PRINTABLE = re.compile(r"^[\x20-\x7e]*$")
_TIMEOUT = re.compile(r"^(\d{1,8})([HMSmun])$")
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
#: Keys gRPC owns or HTTP/2 forbids: never forwarded, never echoed.
TRANSPORT_KEYS = frozenset(
    {
        "content-type",
        "content-length",
        "te",
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "accept-encoding",
    }
)


def _allowed_key(key: str) -> bool:
    return (
        bool(_VALID_KEY.match(key))
        and key not in TRANSPORT_KEYS
        and not key.startswith("grpc-")
        and not key.startswith(":")
    )


class HeaderMapper:
    """The header policy, with its name sets computed once."""

    def __init__(self, forwarded_headers: Iterable[str] = ()) -> None:
        self._forwarded = frozenset(
            [*(name.strip().lower() for name in forwarded_headers if name.strip()), *TRACE_HEADERS]
        )

    def to_metadata(self, headers: Mapping[str, str]) -> Metadata:
        """The gRPC request metadata for these HTTP request headers."""
        metadata: Metadata = []
        for name, value in headers.items():
            lower = name.lower()
            if lower.startswith(_METADATA_PREFIX):
                key = lower[len(_METADATA_PREFIX) :]
            elif lower in _CREDENTIAL_HEADERS or lower in self._forwarded:
                key = lower
            else:
                continue
            if not _allowed_key(key) or key in GATEWAY_OWNED_KEYS:
                continue
            if key.endswith("-bin"):
                metadata.append((key, decode_bin(name, value)))
            elif _PRINTABLE.match(value):
                metadata.append((key, value))
        return metadata


def decode_bin(header: str, value: str) -> bytes:
    """A ``-Bin`` header value (base64, padded or not, standard or URL-safe) as bytes."""
    text = value.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(f"header {header} is not valid base64", header) from None


def parse_timeout(value: str | None, maximum: float | None) -> float | None:
    """``Grpc-Timeout`` (``<1-8 digits><H|M|S|m|u|n>``) in seconds, capped by ``maximum``."""
    if value is None:
        return maximum
    match = _TIMEOUT.match(value.strip())
    if match is None:
        raise GatewayError(
            Code.INVALID_ARGUMENT,
            f"invalid Grpc-Timeout {echo(value)}: expected digits and a unit H, M, S, m, u or n",
        )
    seconds = int(match.group(1)) * _TIMEOUT_UNITS[match.group(2)]
    if maximum is not None:
        seconds = min(seconds, maximum)
    return seconds


def metadata_to_headers(metadata: Iterable[tuple[str, MetadataValue]] | None, prefix: str) -> (
    list[tuple[str, str]]
):
    """Response metadata as ``<prefix><key>`` headers, transport keys filtered."""
    headers: list[tuple[str, str]] = []
    if not metadata:
        return headers
    for key, value in metadata:
        if not _allowed_key(key):
            continue
        if isinstance(value, bytes):
            text = base64.b64encode(value).decode("ascii")
        elif _PRINTABLE.match(value):
            text = value
        else:
            continue
        headers.append((prefix + key, text))
    return headers


#: The response header that names a REST call's request id (grpc-gateway's name for the
#: ``request-id`` metadata, which the server now sends with its status, not before).
REQUEST_ID_HEADER = "Grpc-Metadata-Request-Id"
_REQUEST_ID_METADATA = "request_id"


def stamp_request_id(metadata: Metadata, headers: Mapping[str, str]) -> tuple[Metadata, list[tuple[str, str]]]:
    """``metadata`` with exactly one ``request_id`` (the client's: its ``request_id``
    header, else ``X-Request-Id``; else a new one) and the response headers that answer it:
    ``Grpc-Metadata-Request-Id``, and ``X-Request-Id`` when the client sent that one."""
    given = client_request_id(metadata)
    echo = given is None and sane_request_id(headers.get("X-Request-Id"))
    request_id = given or (headers["X-Request-Id"] if echo else new_request_id())
    stamped = [item for item in metadata if item[0] != _REQUEST_ID_METADATA]
    stamped.append((_REQUEST_ID_METADATA, request_id))
    answer = [(REQUEST_ID_HEADER, request_id)]
    if echo:
        answer.append(("X-Request-Id", request_id))
    return stamped, answer
