"""AWS Signature Version 4, recomputed independently of botocore, for the Bedrock fakes.

Written from AWS's "Create a signed AWS API request" guide: canonical request →
string to sign → HMAC-SHA256 key derivation (date, region, service, ``aws4_request``) →
signature. Non-S3 services URI-encode each path segment *again* in the canonical URI,
so a model id's ``:`` (already ``%3A`` in the URL) appears as ``%253A`` there.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import parse_qsl, quote


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def expected_signature(
    method: str,
    raw_path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    secret_key: str,
    signed_headers: list[str],
    amz_date: str,
    region: str,
    service: str,
) -> str:
    """The signature AWS would compute for this request (``headers`` lower-case names)."""
    canonical_uri = "/".join(quote(segment, safe="-_.~") for segment in raw_path.split("/")) or "/"
    pairs = sorted(parse_qsl(query, keep_blank_values=True))
    canonical_query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in pairs)
    canonical_headers = "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in signed_headers)
    canonical_request = "\n".join(
        [
            method,
            canonical_uri,
            canonical_query,
            canonical_headers,
            ";".join(signed_headers),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    date = amz_date[:8]
    scope = f"{date}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical_request.encode()).hexdigest()]
    )
    key = _hmac(("AWS4" + secret_key).encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def check_request(
    method: str,
    raw_path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    region: str,
    service: str = "bedrock",
) -> str | None:
    """None when the request is correctly signed for these credentials, else why not."""
    authorization = headers.get("authorization", "")
    if not authorization.startswith("AWS4-HMAC-SHA256 "):
        return f"no SigV4 Authorization header: {authorization[:30]!r}"
    fields = dict(part.strip().split("=", 1) for part in authorization[len("AWS4-HMAC-SHA256 ") :].split(","))
    credential = fields.get("Credential", "").split("/")
    if len(credential) != 5 or credential[0] != access_key:
        return f"wrong credential scope {fields.get('Credential')!r}"
    if credential[2:] != [region, service, "aws4_request"]:
        return f"wrong region/service in scope {credential[2:]}"
    signed = fields.get("SignedHeaders", "").split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return f"host and x-amz-date must be signed, got {signed}"
    missing = [name for name in signed if name not in headers]
    if missing:
        return f"signed headers not sent: {missing}"
    amz_date = headers["x-amz-date"]
    if credential[1] != amz_date[:8]:
        return "scope date differs from x-amz-date"
    expected = expected_signature(
        method,
        raw_path,
        query,
        headers,
        body,
        secret_key=secret_key,
        signed_headers=signed,
        amz_date=amz_date,
        region=region,
        service=service,
    )
    if not hmac.compare_digest(expected, fields.get("Signature", "")):
        return "The request signature we calculated does not match the signature you provided."
    return None
