"""A real authorization server for the OAuth tests: the certified ``oidc-provider`` (npm,
installed by ``make oidc-provider`` into ``.tools/``) run by node on loopback, with
test-only non-interactive login and consent (see ``oidc/provider.mjs``)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.servers import ROOT, free_port

TOOLS = ROOT / ".tools"
SCRIPT = Path(__file__).resolve().parent / "oidc" / "provider.mjs"
PACKAGE = TOOLS / "node_modules" / "oidc-provider" / "package.json"
SERVICE = ("service", "service-secret")
SHORT_LIVED = ("short-lived", "short-secret")
#: Seconds the short-lived client's tokens live.
SHORT_TTL = 1


def unavailable() -> str | None:
    """Why the authorization server cannot run here (the tests skip with it), or None."""
    if shutil.which("node") is None:
        return "node is not installed: the OAuth tests run the oidc-provider authorization server on it"
    if not PACKAGE.exists():
        return "oidc-provider is not installed: run `make oidc-provider` (npm)"
    return None


def signing_key(kid: str) -> dict[str, Any]:
    """A fresh RSA private key as a JWK (the provider signs with it and publishes its public half)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private))
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


class AuthorizationServer:
    """oidc-provider on a fixed loopback port; :meth:`restart` with other keys rotates them
    (same issuer, same port)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self._folder = Path(tempfile.mkdtemp(prefix="oidc-"))
        self._process: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    def start(self, keys: list[dict[str, Any]]) -> None:
        settings = self._folder / "settings.json"
        settings.write_text(json.dumps({"port": self.port, "keys": keys, "ttl_short": SHORT_TTL,
                                        "tools": str(TOOLS)}))
        node = shutil.which("node") or "node"
        self._process = subprocess.Popen([node, str(SCRIPT), str(settings)], stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, cwd=TOOLS)
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(self._process, ready), daemon=True).start()
        if not ready.wait(30) or self._process.poll() is not None:
            self.stop()
            raise RuntimeError("oidc-provider did not start:\n" + "".join(self.output))

    def _pump(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.output.append(line)
            if line.startswith("listening "):
                ready.set()
        ready.set()

    def restart(self, keys: list[dict[str, Any]]) -> None:
        self.stop()
        self.start(keys)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(10)
        self._process = None

    def token(self, resource: str, scope: str = "agent:*", client: tuple[str, str] = SERVICE) -> str:
        """A client-credentials access token for ``resource`` (RFC 8707)."""
        form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": scope, "resource": resource})
        basic = base64.b64encode(f"{client[0]}:{client[1]}".encode()).decode()
        request = urllib.request.Request(f"{self.issuer}/token", data=form.encode(), headers={
            "Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise AssertionError(f"token request refused: {error.code} {error.read()[:500]!r}") from None
        token: str = answer["access_token"]
        return token
