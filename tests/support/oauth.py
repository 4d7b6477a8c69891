"""A real authorization server for the OAuth tests: the certified ``oidc-provider`` (npm,
installed by ``make oidc-provider`` into ``.tools/``) run by node on loopback, with
test-only non-interactive login and consent (see ``oidc/provider.mjs``); and the rig of the
OAuth tests (that server, and ``neuro-san serve`` trusting it) with its request helpers."""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.mcp import mcp_server
from tests.support.servers import ROOT, ServerProcess, free_port

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


MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class Rig:
    """The authorization server and the server that trusts it (``audience``: its URL)."""

    def __init__(self, authority: AuthorizationServer, server: ServerProcess, audience: str) -> None:
        self.authority = authority
        self.server = server
        self.audience = audience

    def token(self, scope: str = "agent:*", resource: str | None = None, **kwargs: Any) -> str:
        return self.authority.token(self.audience if resource is None else resource, scope, **kwargs)


@contextmanager
def oauth_rig(folder: Path) -> Iterator[Rig]:
    """An authorization server (key k1) and ``neuro-san serve`` (the MCP test registry, API
    keys on) that accepts its tokens."""
    authority = AuthorizationServer()
    authority.start([signing_key("k1")])
    port = free_port()
    audience = f"http://127.0.0.1:{port}"
    env = {"AGENT_OAUTH_ISSUER": authority.issuer, "AGENT_OAUTH_AUDIENCE": audience}
    try:
        with mcp_server(folder, env=env, http_port=port) as server:
            yield Rig(authority, server, audience)
    finally:
        authority.stop()


def fetch(rig: Rig, method: str, path: str, body: Any = None, token: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    connection = http.client.HTTPConnection("127.0.0.1", rig.server.http_port, timeout=30)
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    try:
        connection.request(method, path, None if body is None else json.dumps(body).encode(), sent)
        response = connection.getresponse()
        raw = response.read()
        reply = json.loads(raw) if raw and response.getheader("Content-Type", "").startswith("application/json") \
            else raw
        return response.status, {k.lower(): v for k, v in response.getheaders()}, reply
    finally:
        connection.close()


def mcp(rig: Rig, method: str, params: dict[str, Any] | None = None, token: str | None = None) -> tuple[
        int, dict[str, str], Any]:
    """One 2026-07-28 request, as a hosted connector sends it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": META}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if params and "name" in params:
        headers["Mcp-Name"] = params["name"]
    return fetch(rig, "POST", "/mcp", body, token, headers)


def call_math(rig: Rig, token: str, tool: str = "math_guy") -> tuple[int, dict[str, str], Any]:
    return mcp(rig, "tools/call", {"name": tool, "arguments": {"user_message": {"text": "6 * 7"}}}, token)


def segment(value: Any) -> str:
    """A JWT segment (unsigned JSON, base64url) for forged tokens."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def base_env() -> dict[str, str]:
    """This environment without any AGENT_* setting (for servers started with their own)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
