"""OAuth 2.1 end to end, the hosts' side: the official MCP SDK client's own OAuth support
completes its flow against a real authorization server (``oidc-provider`` on loopback) and
calls a tool; the A2A cards need no credentials and declare OAuth2; the standalone gateway
publishes the metadata while the service validates; a token never reaches the LLM; settings
that cannot work are refused at start, an unreachable issuer is 503."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.oauth import (
    META,
    MODERN,
    Rig,
    base_env,
    call_math,
    fetch,
    segment,
    unavailable,
)
from tests.support.servers import ROOT, ServerProcess, free_port, start_server

pytestmark = [pytest.mark.slow, pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))]


def test_a2a_cards_need_no_credentials_and_declare_oauth2_but_private_ones_stay_hidden(oauth: Rig) -> None:
    status, _, card = fetch(oauth, "GET", "/a2a/math_guy/.well-known/agent-card.json")
    assert status == 200, card
    oauth2 = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]
    assert oauth2["oauth2MetadataUrl"].startswith(oauth.authority.issuer + "/.well-known/")
    flow = oauth2["flows"]["authorizationCode"]
    assert flow["authorizationUrl"].startswith(oauth.authority.issuer) and flow["pkceRequired"] is True
    assert "agent:*" in flow["scopes"] and flow["tokenUrl"].startswith(oauth.authority.issuer)
    assert "bearer" in card["securitySchemes"]  # the API keys, the other way in
    assert {"schemes": {"oauth2": {"list": ["agent:*"]}}} in card["securityRequirements"]
    # A private network's card is not there without credentials naming it; with them it is.
    assert fetch(oauth, "GET", "/a2a/deep/math_guy/.well-known/agent-card.json")[0] == 404
    deep = oauth.token("agent:* agent:deep/*")
    assert fetch(oauth, "GET", "/a2a/deep/math_guy/.well-known/agent-card.json", token=deep)[0] == 200
    status, _, directory = fetch(oauth, "GET", "/.well-known/agent-card.json")
    assert status == 200 and "deep/math_guy" not in {skill["id"] for skill in directory["skills"]}
    # Everything else stays authenticated.
    assert fetch(oauth, "GET", "/api/v1/math_guy/function")[0] == 401


def test_the_token_never_reaches_the_llm(oauth: Rig) -> None:
    """A network behind a fake LLM, called with a token (and user_id forwarded as usual): the
    LLM's requests carry neither the token nor any part of it."""
    port = free_port()
    audience = f"http://127.0.0.1:{port}"
    env = {"AGENT_OAUTH_ISSUER": oauth.authority.issuer, "AGENT_OAUTH_AUDIENCE": audience}
    with FakeInThread() as fake, start_server(env={**override_env(fake), **env}, http=True, http_port=port) as server:
        token = oauth.authority.token(audience)
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"user_message": {"text": "hello"}}, "_meta": META}}
        connection.request("POST", "/mcp", json.dumps(body).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "echo",
            "Authorization": f"Bearer {token}", "user_id": "someone"})
        response = connection.getresponse()
        assert response.status == 200, response.read()[:500]
        connection.close()
        assert fake.requests, "the network did not reach the fake LLM"
        signature = token.rsplit(".", 1)[1]
        for recorded in fake.requests:
            seen = json.dumps(recorded.headers) + json.dumps(recorded.body)
            assert token not in seen and signature not in seen


def test_the_standalone_gateway_publishes_the_metadata_and_the_service_checks_the_tokens(oauth: Rig) -> None:
    """``neuro-san gateway`` in front of a gRPC-only server, both with the same settings: the
    HTTP pieces come from the gateway, the validation from the service behind it."""
    port = free_port()
    audience = f"http://127.0.0.1:{port}"
    env = {"AGENT_OAUTH_ISSUER": oauth.authority.issuer, "AGENT_OAUTH_AUDIENCE": audience}
    with start_server(env=env) as backend:
        command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", backend.grpc_target,
                   "--port", str(port)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                                   env={**base_env(), **env})
        try:
            gateway = Rig(oauth.authority, ServerProcess(process, 0, port), audience)
            assert load.wait_until(lambda: _answers(gateway), within=20)
            status, _, document = fetch(gateway, "GET", "/.well-known/oauth-protected-resource/mcp")
            assert status == 200 and document["resource"] == audience + "/mcp"
            status, headers, _ = call_math(gateway, "a.b.c")
            assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
            status, _, reply = call_math(gateway, oauth.authority.token(audience))
            assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42.", reply
        finally:
            process.terminate()
            process.wait(15)


def _answers(oauth: Rig) -> bool:
    try:
        return fetch(oauth, "GET", "/healthz")[0] == 200
    except OSError:
        return False


# -- the SDK's own OAuth client ----------------------------------------------------------------


class _Memory:
    """TokenStorage in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_clients_own_oauth_flow_completes_and_calls_a_tool(oauth: Rig, mode: str) -> None:
    redirect_uri = "http://localhost:3030/callback"
    codes: asyncio.Queue[AuthorizationCodeResult] = asyncio.Queue()

    async def authorize(url: str) -> None:
        # The "browser": the provider's test configuration logs in and consents by itself;
        # follow its redirects until it sends us to our redirect URI with the code.
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
            while True:
                response = await browser.get(url)
                location = response.headers.get("location")
                assert response.is_redirect and location, (response.status_code, response.text[:500])
                url = str(httpx2.URL(url).join(location))
                if url.startswith(redirect_uri):
                    query = parse_qs(urlsplit(url).query)
                    assert "code" in query, url
                    await codes.put(AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                                            iss=query.get("iss", [None])[0]))
                    return

    async def callback() -> AuthorizationCodeResult:
        return await codes.get()

    async def scenario() -> None:
        auth = OAuthClientProvider(
            server_url=f"{oauth.server.http_base}/mcp",
            client_metadata=OAuthClientMetadata(client_name="sdk test", redirect_uris=[redirect_uri],
                                                grant_types=["authorization_code", "refresh_token"],
                                                response_types=["code"], token_endpoint_auth_method="none"),
            storage=_Memory(), redirect_handler=authorize, callback_handler=callback,
        )
        async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=60)) as client_http:
            transport = streamable_http_client(f"{oauth.server.http_base}/mcp", http_client=client_http)
            async with Client(transport, mode=mode) as client:
                assert client.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
                assert "math_guy" in {tool.name for tool in (await client.list_tools()).tools}
                result = await client.call_tool("math_guy", {"user_message": {"text": "6 * 7"}})
                assert not result.is_error and result.content[0].text == "The answer is 42."

    asyncio.run(scenario())


# -- settings that cannot work -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AGENT_OAUTH_ISSUER": "http://127.0.0.1:9"}, "AGENT_OAUTH_AUDIENCE is not"),
        ({"AGENT_OAUTH_ISSUER": "http://auth.example.com", "AGENT_OAUTH_AUDIENCE": "https://a.example"},
         "AGENT_OAUTH_ISSUER must be an https URL"),
        ({"AGENT_OAUTH_AUDIENCE": "https://a.example"}, "AGENT_OAUTH_ISSUER is not"),
        ({"AGENT_FORWARDED_REQUEST_METADATA": "request_id Authorization", "AGENT_OAUTH_ISSUER": "https://a.example",
          "AGENT_OAUTH_AUDIENCE": "https://b.example"}, "never forwarded"),
    ],
    ids=["no-audience", "plain-http-issuer", "audience-without-issuer", "forwarding-credentials"],
)
def test_settings_that_cannot_work_are_refused_at_start(env: dict[str, str], expected: str) -> None:
    command = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--port", "0", "--http-port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={**base_env(), **env})
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr, result.stderr[-2000:]


def test_an_unreachable_issuer_is_503_not_a_refused_token(tmp_path: Path) -> None:
    """Tokens cannot be checked while the issuer's keys cannot be fetched: the server is
    unavailable (retry), the caller's token is not declared bad."""
    port = free_port()
    env = {"AGENT_OAUTH_ISSUER": f"http://127.0.0.1:{free_port()}", "AGENT_OAUTH_AUDIENCE": f"http://127.0.0.1:{port}"}
    token = f"{segment({'alg': 'RS256', 'kid': 'k1'})}.{segment({'sub': 'x'})}.c2ln"
    with start_server(env=env, http=True, http_port=port) as server:
        for _ in range(2):  # the second within the refetch pause too
            connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
            connection.request("GET", "/api/v1/list", headers={"Authorization": f"Bearer {token}"})
            assert connection.getresponse().status == 503
            connection.close()


def test_the_standalone_gateway_refuses_them_too() -> None:
    command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", "127.0.0.1:9", "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={**base_env(), "AGENT_OAUTH_ISSUER": "https://auth.example.com"})
    assert result.returncode != 0
    assert "AGENT_OAUTH_AUDIENCE is not" in result.stdout + result.stderr, result.stderr[-2000:]
