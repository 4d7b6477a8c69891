"""A client-supplied value an error repeats is cut to ~200 characters (issue 33 item 8): a
7,000-character agent name or tenant, echoed whole, made a ~14 kB gRPC trailer the client
refused (RESOURCE_EXHAUSTED) and 14 kB error bodies on HTTP. One real server; gRPC, REST,
A2A JSON-RPC (path and tenant), A2A HTTP+JSON and MCP."""

from __future__ import annotations

import json
import urllib.request

import grpc
import pytest

from neuro_san.core.errors import ECHO_LIMIT
from tests.support import grpc_calls as calls
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow

NAME = "x" * 7000
#: Room for the message around one cut value (and its repetition in details).
BUDGET = 4 * ECHO_LIMIT + 400


def _post(url: str, body: object | None, headers: dict[str, str]) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_grpc_answers_not_found_with_a_small_trailer(server: ServerProcess) -> None:
    with grpc.insecure_channel(server.grpc_target) as channel, pytest.raises(grpc.RpcError) as raised:
        calls.function(channel, NAME, qualified=True)
    error = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND, error.details()
    assert "(7000 characters)" in error.details()
    assert sum(len(value) for _key, value in error.trailing_metadata() or ()) < BUDGET


def test_http_front_ends_echo_a_cut_name(server: ServerProcess) -> None:
    base = server.http_base
    a2a = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    mcp = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
    answers = [
        _post(f"{base}/api/v1/{NAME}/function", None, {}),
        _post(f"{base}/a2a/{NAME}", send, a2a),
        _post(f"{base}/a2a", {**send, "params": {"tenant": NAME, "message": message}}, a2a),
        _post(f"{base}/a2a/{NAME}/rest/tasks", None, {"A2A-Version": "1.0"}),
        _post(f"{base}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": NAME, "arguments": {}}}, mcp),
        _post(f"{base}/mcp", {"jsonrpc": "2.0", "id": 1, "method": NAME}, mcp),
    ]
    for status, body in answers:
        assert status in (200, 404), body[:300]
        assert b"(7000 characters)" in body and len(body) < BUDGET, (status, len(body), body[:300])


def test_a_huge_a2a_version_is_not_supported_never_an_internal_error(server: ServerProcess) -> None:
    """The SDK parsed a 7,000-digit A2A-Version as a number and failed (500, -32603)."""
    version = "9" * 7000
    get = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}
    jsonrpc = _post(f"{server.http_base}/a2a/echo", get, {"Content-Type": "application/json", "A2A-Version": version})
    rest = _post(f"{server.http_base}/a2a/echo/rest/tasks", None, {"A2A-Version": version})
    assert jsonrpc[0] == 200 and json.loads(jsonrpc[1])["error"]["code"] == -32009, jsonrpc
    assert rest[0] == 400 and b"is not supported" in rest[1], rest
    assert max(len(jsonrpc[1]), len(rest[1])) < BUDGET
