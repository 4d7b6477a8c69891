"""Signed A2A push notifications: a short-lived JWT per delivery, checked with our JWKS.

With ``AGENT_A2A_PUSH_SIGNING_KEY_FILE`` (a PEM private key: EC P-256 → ES256, or RSA of
2048 bits or more → RS256) every notification whose configuration carries no credentials
of its own is sent with ``Authorization: Bearer <JWT>``. The receiver fetches the public
key from ``<server>/.well-known/jwks.json`` (by the JWT's ``kid``) and checks:

- the signature, ``iat``/``exp`` (valid five minutes),
- ``aud``: its own webhook URL, so a token cannot be replayed to another receiver,
- ``request_body_sha256``: the hex SHA-256 of the exact body received,
- ``task_id``: the task the notification is about (``jti`` is unique per delivery).

Every replica must use the same key file, so that any replica's JWKS verifies any
replica's notifications.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from neuro_san.settings import process_env

SIGNING_KEY_ENV = "AGENT_A2A_PUSH_SIGNING_KEY_FILE"
TOKEN_SECONDS = 300


class PushSigner:
    """Signs one JWT per delivery with the configured key; publishes its public half."""

    def __init__(self, pem: bytes) -> None:
        # cryptography and PyJWT (a dependency of the MCP SDK): only when signing is configured.
        import jwt
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        try:
            key = load_pem_private_key(pem, password=None)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{SIGNING_KEY_ENV}: not an unencrypted PEM private key ({error})") from None
        if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
            self.algorithm, public = "ES256", jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        elif isinstance(key, rsa.RSAPrivateKey) and key.key_size >= 2048:
            self.algorithm, public = "RS256", jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        else:
            raise ValueError(f"{SIGNING_KEY_ENV}: use an EC P-256 key (ES256) or an RSA key of 2048 bits or more")
        self._jwt = jwt
        self._key = key
        self.kid = _thumbprint(public)
        self.public_jwk: dict[str, Any] = {**public, "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.public_jwk]}

    def token(self, url: str, body: bytes, task_id: str) -> str:
        now = int(time.time())
        claims = {
            "iss": "neuro-san", "aud": url, "iat": now, "exp": now + TOKEN_SECONDS, "jti": secrets.token_hex(12),
            "task_id": task_id, "request_body_sha256": hashlib.sha256(body).hexdigest(),
        }
        return str(self._jwt.encode(claims, self._key, algorithm=self.algorithm, headers={"kid": self.kid}))


def _thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638: the SHA-256 of the key's required members, as the key id."""
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    canonical = json.dumps({name: jwk[name] for name in members}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def signer_from_env(env: Mapping[str, str] | None = None) -> PushSigner | None:
    """The signer ``AGENT_A2A_PUSH_SIGNING_KEY_FILE`` names, or None; ValueError when unusable."""
    path = (process_env() if env is None else env).get(SIGNING_KEY_ENV, "").strip()
    if not path:
        return None
    try:
        with open(path, "rb") as file:
            pem = file.read()
    except OSError as error:
        raise ValueError(f"{SIGNING_KEY_ENV}: cannot read {path!r} ({error.strerror})") from None
    return PushSigner(pem)
