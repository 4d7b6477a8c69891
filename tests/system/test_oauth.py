"""OAuth 2.1 end to end, the tokens: a real authorization server (the certified
``oidc-provider``, on loopback) issues JWT access tokens; ``neuro-san serve`` (API keys on
too) publishes its RFC 9728 metadata, challenges with ``WWW-Authenticate``, accepts good
tokens on MCP, REST, gRPC and A2A, refuses the others, and follows a key rotation. The
hosts' side (the SDK's OAuth client, the A2A cards, the standalone gateway, settings):
``test_oauth_hosts.py``."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc

from tests.support import load
from tests.support.mcp import USER_KEY
from tests.support.oauth import (
    SHORT_LIVED,
    SHORT_TTL,
    Rig,
    call_math,
    fetch,
    mcp,
    segment,
    signing_key,
    unavailable,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))]


# -- the metadata and the challenges ---------------------------------------------------------


def test_the_protected_resource_metadata_names_the_issuer_and_scopes(oauth: Rig) -> None:
    status, headers, document = fetch(oauth, "GET", "/.well-known/oauth-protected-resource")
    assert status == 200, document
    assert document["resource"] == oauth.audience
    assert document["authorization_servers"] == [oauth.authority.issuer]
    assert document["scopes_supported"] == ["agent:*"] and document["bearer_methods_supported"] == ["header"]
    status, _, document = fetch(oauth, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert status == 200 and document["resource"] == oauth.audience + "/mcp"


@pytest.mark.parametrize("era", ["modern", "legacy", "rest"])
def test_without_a_token_401_says_where_the_metadata_is(oauth: Rig, era: str) -> None:
    if era == "modern":
        status, headers, _ = mcp(oauth, "tools/list")
        expected = f'resource_metadata="{oauth.audience}/.well-known/oauth-protected-resource/mcp"'
    elif era == "legacy":
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        status, headers, _ = fetch(oauth, "POST", "/mcp", initialize)
        expected = f'resource_metadata="{oauth.audience}/.well-known/oauth-protected-resource/mcp"'
    else:
        status, headers, _ = fetch(oauth, "GET", "/api/v1/list")
        expected = f'resource_metadata="{oauth.audience}/.well-known/oauth-protected-resource"'
    assert status == 401
    challenge = headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and expected in challenge and 'scope="agent:*"' in challenge


# -- tokens ----------------------------------------------------------------------------------


def test_a_good_token_lists_and_calls_on_mcp_and_rest(oauth: Rig) -> None:
    token = oauth.token()
    status, _, reply = mcp(oauth, "tools/list", token=token)
    assert status == 200, reply
    assert {tool["name"] for tool in reply["result"]["tools"]} == {"math_guy", "parrot", "tools__math_guy"}
    assert reply["result"]["cacheScope"] == "private"
    status, _, reply = call_math(oauth, token)
    assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42.", reply
    status, _, listing = fetch(oauth, "GET", "/api/v1/list", token=token)
    assert status == 200 and "deep/math_guy" not in {a["agent_name"] for a in listing["agents"]}
    # A token for the MCP endpoint's own resource (its path-suffixed metadata) works there too.
    status, _, reply = call_math(oauth, oauth.token(resource=oauth.audience + "/mcp"))
    assert status == 200, reply


def test_scopes_decide_the_networks_as_a_keys_patterns_do(oauth: Rig) -> None:
    only_math = oauth.token("agent:math_guy")
    status, _, reply = mcp(oauth, "tools/list", token=only_math)
    assert {tool["name"] for tool in reply["result"]["tools"]} == {"math_guy"}
    status, headers, reply = mcp(oauth, "tools/call", {"name": "echo", "arguments": {"user_message": {"text": "x"}}},
                                 only_math)
    assert status == 403, reply
    assert headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')
    status, headers, _ = fetch(oauth, "POST", "/api/v1/echo/streaming_chat", {"user_message": {"text": "hi"}},
                              token=only_math)
    assert status == 403 and 'error="insufficient_scope"' in headers["www-authenticate"]
    # agent:deep/* reaches the private network, as a key naming it does.
    deep = oauth.token("agent:* agent:deep/*")
    status, _, reply = mcp(oauth, "tools/list", token=deep)
    assert "deep__math_guy" in {tool["name"] for tool in reply["result"]["tools"]}


@pytest.mark.parametrize("case", ["wrong-audience", "bad-signature", "expired", "not-a-jwt"])
def test_tokens_that_are_not_for_us_are_401_invalid_token(oauth: Rig, case: str) -> None:
    if case == "wrong-audience":
        token = oauth.token(resource="https://other.example/")
    elif case == "bad-signature":
        head, payload, signature = oauth.token().split(".")
        token = ".".join((head, payload, ("A" if signature[0] != "A" else "B") + signature[1:]))
    elif case == "expired":
        token = oauth.token(client=SHORT_LIVED)
        assert call_math(oauth, token)[0] == 200  # good while it lives
        # Past its lifetime and our 5 s of tolerated clock skew.
        assert load.wait_until(lambda: call_math(oauth, token)[0] == 401, within=SHORT_TTL + 15, step=1.0)
    else:
        token = "not-a-key-and-not-a-jwt"
    status, headers, reply = call_math(oauth, token)
    assert status == 401, reply
    challenge = headers["www-authenticate"]
    if case != "not-a-jwt":
        assert 'error="invalid_token"' in challenge
    assert "resource_metadata=" in challenge
    assert token not in json.dumps(reply)  # the token is never echoed


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
    oauth: Rig, header: dict[str, Any], claims: dict[str, Any], signature: str, raw: bool
) -> None:
    token = f"{segment(header)}.{segment(claims)}.{signature}" if not raw else f"{signature}.{signature}.x"
    status, headers, _ = call_math(oauth, token)
    assert status == 401, status
    assert "resource_metadata=" in headers["www-authenticate"]


def test_api_keys_keep_working_beside_oauth(oauth: Rig) -> None:
    status, _, reply = call_math(oauth, USER_KEY)
    assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42."
    status, _, _ = fetch(oauth, "GET", "/api/v1/list", token=USER_KEY)
    assert status == 200


def test_grpc_and_a2a_take_the_same_tokens(oauth: Rig) -> None:
    token = oauth.token()
    with grpc.insecure_channel(oauth.server.grpc_target) as channel:
        stub = concierge_pb2_grpc.ConciergeServiceStub(channel)
        listing = stub.List(concierge_pb2.ConciergeRequest(), metadata=[("authorization", f"Bearer {token}")])
        assert "math_guy" in {agent.agent_name for agent in listing.agents}
        with pytest.raises(grpc.RpcError) as refused:
            stub.List(concierge_pb2.ConciergeRequest(), metadata=[("authorization", "Bearer a.b.c")])
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "6 * 7"}]}}}
    status, headers, _ = fetch(oauth, "POST", "/a2a/math_guy", message, headers={"A2A-Version": "1.0"})
    assert status == 401 and "resource_metadata=" in headers["www-authenticate"]
    status, _, reply = fetch(oauth, "POST", "/a2a/math_guy", message, token=token, headers={"A2A-Version": "1.0"})
    assert status == 200 and "42" in json.dumps(reply), reply


# -- key rotation (last: it restarts the authorization server) ---------------------------------


def test_a_key_rotation_is_followed_and_the_rotated_away_key_refused(oauth: Rig) -> None:
    old = oauth.token()
    assert call_math(oauth, old)[0] == 200
    oauth.authority.restart([signing_key("k2")])  # same issuer, k1 no longer published
    new = oauth.token()
    # The unknown kid makes the server fetch the keys again (at most every 2 s).
    assert load.wait_until(lambda: call_math(oauth, new)[0] == 200, within=20, step=0.5)
    status, headers, reply = call_math(oauth, old)
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"], reply
