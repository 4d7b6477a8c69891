"""OAuth 2.1 end to end: a real authorization server (the certified ``oidc-provider``, on
loopback) issues JWT access tokens; ``neuro-san serve`` (API keys on too) validates them on
MCP, REST, gRPC and A2A, publishes its RFC 9728 metadata, challenges with
``WWW-Authenticate``, follows a key rotation; the official MCP SDK client's own OAuth
support completes its flow against both and calls a tool."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import grpc
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc

from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.mcp import USER_KEY, mcp_server
from tests.support.oauth import SHORT_LIVED, SHORT_TTL, AuthorizationServer, signing_key, unavailable
from tests.support.servers import ROOT, ServerProcess, free_port, start_server

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class Rig:
    def __init__(self, authority: AuthorizationServer, server: ServerProcess, audience: str) -> None:
        self.authority = authority
        self.server = server
        self.audience = audience

    def token(self, scope: str = "agent:*", resource: str | None = None, **kwargs: Any) -> str:
        return self.authority.token(self.audience if resource is None else resource, scope, **kwargs)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    authority = AuthorizationServer()
    authority.start([signing_key("k1")])
    port = free_port()
    audience = f"http://127.0.0.1:{port}"
    env = {"AGENT_OAUTH_ISSUER": authority.issuer, "AGENT_OAUTH_AUDIENCE": audience}
    try:
        with mcp_server(Path(tmp_path_factory.mktemp("oauth")), env=env, http_port=port) as server:
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


# -- the metadata and the challenges ---------------------------------------------------------


def test_the_protected_resource_metadata_names_the_issuer_and_scopes(rig: Rig) -> None:
    status, headers, document = fetch(rig, "GET", "/.well-known/oauth-protected-resource")
    assert status == 200, document
    assert document["resource"] == rig.audience
    assert document["authorization_servers"] == [rig.authority.issuer]
    assert document["scopes_supported"] == ["agent:*"] and document["bearer_methods_supported"] == ["header"]
    status, _, document = fetch(rig, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert status == 200 and document["resource"] == rig.audience + "/mcp"


@pytest.mark.parametrize("era", ["modern", "legacy", "rest"])
def test_without_a_token_401_says_where_the_metadata_is(rig: Rig, era: str) -> None:
    if era == "modern":
        status, headers, _ = mcp(rig, "tools/list")
        expected = f'resource_metadata="{rig.audience}/.well-known/oauth-protected-resource/mcp"'
    elif era == "legacy":
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        status, headers, _ = fetch(rig, "POST", "/mcp", initialize)
        expected = f'resource_metadata="{rig.audience}/.well-known/oauth-protected-resource/mcp"'
    else:
        status, headers, _ = fetch(rig, "GET", "/api/v1/list")
        expected = f'resource_metadata="{rig.audience}/.well-known/oauth-protected-resource"'
    assert status == 401
    challenge = headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and expected in challenge and 'scope="agent:*"' in challenge


# -- tokens ----------------------------------------------------------------------------------


def test_a_good_token_lists_and_calls_on_mcp_and_rest(rig: Rig) -> None:
    token = rig.token()
    status, _, reply = mcp(rig, "tools/list", token=token)
    assert status == 200, reply
    assert {tool["name"] for tool in reply["result"]["tools"]} == {"math_guy", "parrot", "tools__math_guy"}
    assert reply["result"]["cacheScope"] == "private"
    status, _, reply = call_math(rig, token)
    assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42.", reply
    status, _, listing = fetch(rig, "GET", "/api/v1/list", token=token)
    assert status == 200 and "deep/math_guy" not in {a["agent_name"] for a in listing["agents"]}
    # A token for the MCP endpoint's own resource (its path-suffixed metadata) works there too.
    status, _, reply = call_math(rig, rig.token(resource=rig.audience + "/mcp"))
    assert status == 200, reply


def test_scopes_decide_the_networks_as_a_keys_patterns_do(rig: Rig) -> None:
    only_math = rig.token("agent:math_guy")
    status, _, reply = mcp(rig, "tools/list", token=only_math)
    assert {tool["name"] for tool in reply["result"]["tools"]} == {"math_guy"}
    status, headers, reply = mcp(rig, "tools/call", {"name": "echo", "arguments": {"user_message": {"text": "x"}}},
                                 only_math)
    assert status == 403, reply
    assert headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')
    status, headers, _ = fetch(rig, "POST", "/api/v1/echo/streaming_chat", {"user_message": {"text": "hi"}},
                              token=only_math)
    assert status == 403 and 'error="insufficient_scope"' in headers["www-authenticate"]
    # agent:deep/* reaches the private network, as a key naming it does.
    deep = rig.token("agent:* agent:deep/*")
    status, _, reply = mcp(rig, "tools/list", token=deep)
    assert "deep__math_guy" in {tool["name"] for tool in reply["result"]["tools"]}


@pytest.mark.parametrize("case", ["wrong-audience", "bad-signature", "expired", "not-a-jwt"])
def test_tokens_that_are_not_for_us_are_401_invalid_token(rig: Rig, case: str) -> None:
    if case == "wrong-audience":
        token = rig.token(resource="https://other.example/")
    elif case == "bad-signature":
        head, payload, signature = rig.token().split(".")
        token = ".".join((head, payload, ("A" if signature[0] != "A" else "B") + signature[1:]))
    elif case == "expired":
        token = rig.token(client=SHORT_LIVED)
        assert call_math(rig, token)[0] == 200  # good while it lives
        # Past its lifetime and our 5 s of tolerated clock skew.
        assert load.wait_until(lambda: call_math(rig, token)[0] == 401, within=SHORT_TTL + 15, step=1.0)
    else:
        token = "not-a-key-and-not-a-jwt"
    status, headers, reply = call_math(rig, token)
    assert status == 401, reply
    challenge = headers["www-authenticate"]
    if case != "not-a-jwt":
        assert 'error="invalid_token"' in challenge
    assert "resource_metadata=" in challenge
    assert token not in json.dumps(reply)  # the token is never echoed


def _segment(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    header=st.fixed_dictionaries({}, optional={
        "alg": st.sampled_from(["RS256", "ES256", "PS256", "EdDSA", "HS256", "none", ""]) | st.integers(),
        "kid": st.sampled_from(["k1", "k2", ""]) | st.integers() | st.none(),
        "typ": st.just("at+jwt"),
    }),
    claims=st.dictionaries(st.sampled_from(["iss", "aud", "exp", "nbf", "scope", "sub"]),
                           st.text(max_size=8) | st.integers() | st.lists(st.text(max_size=4), max_size=2)),
    signature=st.text("ABCDEFabcdef0123456789-_", max_size=40),
    raw=st.booleans(),
)
def test_forged_and_malformed_tokens_are_401_never_5xx(
    rig: Rig, header: dict[str, Any], claims: dict[str, Any], signature: str, raw: bool
) -> None:
    token = f"{_segment(header)}.{_segment(claims)}.{signature}" if not raw else f"{signature}.{signature}.x"
    status, headers, _ = call_math(rig, token)
    assert status == 401, status
    assert "resource_metadata=" in headers["www-authenticate"]


def test_api_keys_keep_working_beside_oauth(rig: Rig) -> None:
    status, _, reply = call_math(rig, USER_KEY)
    assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42."
    status, _, _ = fetch(rig, "GET", "/api/v1/list", token=USER_KEY)
    assert status == 200


def test_grpc_and_a2a_take_the_same_tokens(rig: Rig) -> None:
    token = rig.token()
    with grpc.insecure_channel(rig.server.grpc_target) as channel:
        stub = concierge_pb2_grpc.ConciergeServiceStub(channel)
        listing = stub.List(concierge_pb2.ConciergeRequest(), metadata=[("authorization", f"Bearer {token}")])
        assert "math_guy" in {agent.agent_name for agent in listing.agents}
        with pytest.raises(grpc.RpcError) as refused:
            stub.List(concierge_pb2.ConciergeRequest(), metadata=[("authorization", "Bearer a.b.c")])
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "6 * 7"}]}}}
    status, headers, _ = fetch(rig, "POST", "/a2a/math_guy", message, headers={"A2A-Version": "1.0"})
    assert status == 401 and "resource_metadata=" in headers["www-authenticate"]
    status, _, reply = fetch(rig, "POST", "/a2a/math_guy", message, token=token, headers={"A2A-Version": "1.0"})
    assert status == 200 and "42" in json.dumps(reply), reply


def test_a2a_cards_need_no_credentials_and_declare_oauth2_but_private_ones_stay_hidden(rig: Rig) -> None:
    status, _, card = fetch(rig, "GET", "/a2a/math_guy/.well-known/agent-card.json")
    assert status == 200, card
    oauth2 = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]
    assert oauth2["oauth2MetadataUrl"].startswith(rig.authority.issuer + "/.well-known/")
    flow = oauth2["flows"]["authorizationCode"]
    assert flow["authorizationUrl"].startswith(rig.authority.issuer) and flow["pkceRequired"] is True
    assert "agent:*" in flow["scopes"] and flow["tokenUrl"].startswith(rig.authority.issuer)
    assert "bearer" in card["securitySchemes"]  # the API keys, the other way in
    assert {"schemes": {"oauth2": {"list": ["agent:*"]}}} in card["securityRequirements"]
    # A private network's card is not there without credentials naming it; with them it is.
    assert fetch(rig, "GET", "/a2a/deep/math_guy/.well-known/agent-card.json")[0] == 404
    deep = rig.token("agent:* agent:deep/*")
    assert fetch(rig, "GET", "/a2a/deep/math_guy/.well-known/agent-card.json", token=deep)[0] == 200
    status, _, directory = fetch(rig, "GET", "/.well-known/agent-card.json")
    assert status == 200 and "deep/math_guy" not in {skill["id"] for skill in directory["skills"]}
    # Everything else stays authenticated.
    assert fetch(rig, "GET", "/api/v1/math_guy/function")[0] == 401


def test_the_token_never_reaches_the_llm(rig: Rig) -> None:
    """A network behind a fake LLM, called with a token (and user_id forwarded as usual): the
    LLM's requests carry neither the token nor any part of it."""
    port = free_port()
    audience = f"http://127.0.0.1:{port}"
    env = {"AGENT_OAUTH_ISSUER": rig.authority.issuer, "AGENT_OAUTH_AUDIENCE": audience}
    with FakeInThread() as fake, start_server(env={**override_env(fake), **env}, http=True, http_port=port) as server:
        token = rig.authority.token(audience)
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


def test_the_standalone_gateway_publishes_the_metadata_and_the_service_checks_the_tokens(rig: Rig) -> None:
    """``neuro-san gateway`` in front of a gRPC-only server, both with the same settings: the
    HTTP pieces come from the gateway, the validation from the service behind it."""
    port = free_port()
    audience = f"http://127.0.0.1:{port}"
    env = {"AGENT_OAUTH_ISSUER": rig.authority.issuer, "AGENT_OAUTH_AUDIENCE": audience}
    with start_server(env=env) as backend:
        command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", backend.grpc_target,
                   "--port", str(port)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                                   env={**_base_env(), **env})
        try:
            gateway = Rig(rig.authority, ServerProcess(process, 0, port), audience)
            assert load.wait_until(lambda: _answers(gateway), within=20)
            status, _, document = fetch(gateway, "GET", "/.well-known/oauth-protected-resource/mcp")
            assert status == 200 and document["resource"] == audience + "/mcp"
            status, headers, _ = call_math(gateway, "a.b.c")
            assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
            status, _, reply = call_math(gateway, rig.authority.token(audience))
            assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42.", reply
        finally:
            process.terminate()
            process.wait(15)


def _answers(rig: Rig) -> bool:
    try:
        return fetch(rig, "GET", "/healthz")[0] == 200
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
def test_the_sdk_clients_own_oauth_flow_completes_and_calls_a_tool(rig: Rig, mode: str) -> None:
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
            server_url=f"{rig.server.http_base}/mcp",
            client_metadata=OAuthClientMetadata(client_name="sdk test", redirect_uris=[redirect_uri],
                                                grant_types=["authorization_code", "refresh_token"],
                                                response_types=["code"], token_endpoint_auth_method="none"),
            storage=_Memory(), redirect_handler=authorize, callback_handler=callback,
        )
        async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=60)) as client_http:
            transport = streamable_http_client(f"{rig.server.http_base}/mcp", http_client=client_http)
            async with Client(transport, mode=mode) as client:
                assert client.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
                assert "math_guy" in {tool.name for tool in (await client.list_tools()).tools}
                result = await client.call_tool("math_guy", {"user_message": {"text": "6 * 7"}})
                assert not result.is_error and result.content[0].text == "The answer is 42."

    asyncio.run(scenario())


# -- key rotation (last: it restarts the authorization server) ---------------------------------


def test_a_key_rotation_is_followed_and_the_rotated_away_key_refused(rig: Rig) -> None:
    old = rig.token()
    assert call_math(rig, old)[0] == 200
    rig.authority.restart([signing_key("k2")])  # same issuer, k1 no longer published
    new = rig.token()
    # The unknown kid makes the server fetch the keys again (at most every 2 s).
    assert load.wait_until(lambda: call_math(rig, new)[0] == 200, within=20, step=0.5)
    status, headers, reply = call_math(rig, old)
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"], reply


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
                            env={**_base_env(), **env})
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr, result.stderr[-2000:]


def test_an_unreachable_issuer_is_503_not_a_refused_token(tmp_path: Path) -> None:
    """Tokens cannot be checked while the issuer's keys cannot be fetched: the server is
    unavailable (retry), the caller's token is not declared bad."""
    port = free_port()
    env = {"AGENT_OAUTH_ISSUER": f"http://127.0.0.1:{free_port()}", "AGENT_OAUTH_AUDIENCE": f"http://127.0.0.1:{port}"}
    token = f"{_segment({'alg': 'RS256', 'kid': 'k1'})}.{_segment({'sub': 'x'})}.c2ln"
    with start_server(env=env, http=True, http_port=port) as server:
        for _ in range(2):  # the second within the refetch pause too
            connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
            connection.request("GET", "/api/v1/list", headers={"Authorization": f"Bearer {token}"})
            assert connection.getresponse().status == 503
            connection.close()


def test_the_standalone_gateway_refuses_them_too() -> None:
    command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", "127.0.0.1:9", "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={**_base_env(), "AGENT_OAUTH_ISSUER": "https://auth.example.com"})
    assert result.returncode != 0
    assert "AGENT_OAUTH_AUDIENCE is not" in result.stdout + result.stderr, result.stderr[-2000:]


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
