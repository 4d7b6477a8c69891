"""The MCP server's Streamable HTTP transport and JSON-RPC rules, over raw HTTP against a
real ``neuro-san serve``; and fuzzed bodies and headers find no 5xx and no hang."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.mcp import USER_KEY, mcp_server
from tests.support.servers import ServerProcess, start_server

AUTH = {"Authorization": f"Bearer {USER_KEY}", "Content-Type": "application/json"}
V0618 = {**AUTH, "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with mcp_server(Path(tmp_path_factory.mktemp("mcp"))) as server:
        yield server


def send(
    server: ServerProcess, body: Any, headers: dict[str, str] | None = None, method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
        connection.request(method, "/mcp", raw if method == "POST" else None, V0618 if headers is None else headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(version: str) -> dict[str, Any]:
    client = {"name": "t", "version": "1"}
    return rpc("initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": client})


def test_initialize_negotiates_and_hands_out_a_session_that_any_replica_accepts(served: ServerProcess) -> None:
    for asked, answered in (("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                            ("2099-01-01", "2025-11-25"), ("2024-11-05", "2025-11-25")):
        status, headers, body = send(served, initialize(asked), AUTH)
        assert status == 200, body
        assert json.loads(body)["result"]["protocolVersion"] == answered
        assert headers["mcp-session-id"].isascii() and len(headers["mcp-session-id"]) >= 16
    status, _, body = send(served, rpc("ping", request_id="a"), {**V0618, "Mcp-Session-Id": "unknown-to-anyone"})
    assert (status, json.loads(body)) == (200, {"jsonrpc": "2.0", "id": "a", "result": {}})
    missing_client_info = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    status, _, body = send(served, missing_client_info, AUTH)
    assert status == 200 and json.loads(body)["error"]["code"] == -32602


def test_notifications_and_responses_get_202_and_ids_keep_their_type(served: ServerProcess) -> None:
    for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
                    {"jsonrpc": "2.0", "id": 5, "result": {}}):
        status, _, body = send(served, message)
        assert (status, body) == (202, b"")
    for request_id in (7, "seven", "<x>"):
        status, _, body = send(served, rpc("frobnicate", request_id=request_id))
        assert status == 200
        assert json.loads(body) == {"jsonrpc": "2.0", "id": request_id,
                                    "error": {"code": -32601, "message": "Method not found: frobnicate"}}
    for method, key in (("prompts/list", "prompts"), ("resources/list", "resources")):
        assert json.loads(send(served, rpc(method))[2])["result"] == {key: []}


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        (b'{"jsonrpc":"2.0","id":26,', None, 400, -32700),
        (b"", None, 400, -32700),
        ({"id": 1, "method": "ping"}, None, 400, -32600),  # no "jsonrpc"
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None, 400, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, None, 400, -32600),
        (rpc("ping"), {**AUTH, "MCP-Protocol-Version": "2099-01-01"}, 400, -32022),
        ([rpc("ping")], None, 400, -32600),  # batches ended with 2025-06-18
        ([], {**AUTH, "MCP-Protocol-Version": "2025-03-26"}, 400, -32600),
        ([rpc("ping")] * 65, {**AUTH, "MCP-Protocol-Version": "2025-03-26"}, 400, -32600),
        (rpc("ping"), {**V0618, "Accept": "text/html"}, 406, -32600),
        (rpc("ping"), {**V0618, "Origin": "http://evil.example"}, 403, -32600),
        (rpc("tools/list"), {"MCP-Protocol-Version": "2025-06-18"}, 401, -32001),
        (rpc("tools/list"), {**V0618, "Authorization": "Bearer nope"}, 401, -32001),
    ],
    ids=["truncated", "empty", "no-jsonrpc", "null-id", "array-params", "unknown-version", "batch-0618",
         "empty-batch", "huge-batch", "accept-html", "foreign-origin", "no-key", "wrong-key"],
)
def test_bad_requests_get_clear_json_rpc_errors(
    served: ServerProcess, body: Any, headers: dict[str, str] | None, status: int, code: int
) -> None:
    got, response_headers, raw = send(served, body, headers)
    assert got == status, raw
    assert response_headers["content-type"].startswith("application/json")
    reply = json.loads(raw)
    assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code and reply["error"]["message"]
    if code == -32022:
        assert reply["error"]["data"]["supported"] == ["2025-03-26", "2025-06-18", "2025-11-25"]


def test_batches_follow_json_rpc_under_2025_03_26(served: ServerProcess) -> None:
    headers = {**AUTH, "MCP-Protocol-Version": "2025-03-26"}
    batch = [rpc("ping", request_id=1), {"jsonrpc": "2.0", "method": "notifications/initialized"},
             rpc("tools/list", request_id=2), {"bogus": True}, initialize("2025-03-26") | {"id": 3}]
    status, _, body = send(served, batch, headers)
    assert status == 200
    replies = json.loads(body)
    assert [r.get("id") for r in replies] == [1, 2, None, 3]
    assert replies[0]["result"] == {} and {t["name"] for t in replies[1]["result"]["tools"]} >= {"math_guy"}
    assert replies[2]["error"]["code"] == -32600 and replies[3]["error"]["code"] == -32600
    status, _, body = send(served, [{"jsonrpc": "2.0", "method": "notifications/initialized"}], headers)
    assert (status, body) == (202, b"")


def test_a_caller_cannot_redirect_a_call_with_its_own_agent_name_metadata(served: ServerProcess) -> None:
    call = rpc("tools/call", {"name": "math_guy", "arguments": {"user_message": {"text": "6 * 7"}}})
    status, _, body = send(served, call, {**V0618, "Grpc-Metadata-agent-name": "hello_world"})
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "The answer is 42."


def test_get_opens_no_stream_and_delete_ends_any_session(served: ServerProcess) -> None:
    status, headers, _ = send(served, None, V0618, method="GET")
    assert status == 405 and headers["allow"] == "POST, DELETE"
    assert send(served, None, {**V0618, "Mcp-Session-Id": "abc"}, method="DELETE")[0] == 204
    assert send(served, None, V0618, method="DELETE")[0] == 400


def test_a_call_with_a_progress_token_streams_progress_then_the_result_unescaped(served: ServerProcess) -> None:
    text = "hello <b>\"world\"</b> & it's"
    call = rpc("tools/call", {"name": "parrot", "arguments": {"user_message": {"text": text}},
                              "_meta": {"progressToken": 9}})
    status, headers, body = send(served, call, {**V0618, "Accept": "application/json, text/event-stream"})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[len("data: "):]) for line in body.decode().splitlines() if line.startswith("data: ")]
    progress = [e for e in events if e.get("method") == "notifications/progress"]
    assert progress and all(e["params"]["progressToken"] == 9 for e in progress)
    assert events[-1]["id"] == 1 and events[-1]["result"]["content"][0]["text"] == text  # no HTML escaping
    # Without a token, plain JSON on one line (neuro-san's own client reads it line by line).
    plain = rpc("tools/call", {"name": "parrot", "arguments": {"user_message": {"text": text}}})
    status, headers, body = send(served, plain)
    assert headers["content-type"].startswith("application/json") and b"\n" not in body.strip()
    assert json.loads(body)["result"]["content"][0]["text"] == text


def test_a_body_over_the_size_limit_is_refused(served: ServerProcess) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", served.http_port, timeout=30)
    try:
        connection.putrequest("POST", "/mcp")
        for name, value in {**V0618, "Content-Length": str(64 * 1024 * 1024)}.items():
            connection.putheader(name, value)
        connection.endheaders()
        connection.send(b'{"jsonrpc":')
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"]["code"] == -32600
    finally:
        connection.close()


def test_agent_mcp_enable_false_turns_it_off() -> None:
    with start_server(env={"AGENT_MCP_ENABLE": "false"}, http=True) as server:
        assert send(server, rpc("ping"), V0618)[0] == 404
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
        connection.request("GET", "/api/v1/list")
        assert connection.getresponse().status == 200


# -- fuzz ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
methods = st.sampled_from([
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "resources/list",
    "notifications/cancelled", "notifications/initialized", "logging/setLevel", "",
]) | st.text(max_size=10)
tool_params = st.fixed_dictionaries({"name": st.sampled_from(["math_guy", "parrot", "nope", ""]) | st.text(max_size=5)},
                                    optional={"arguments": json_values | st.fixed_dictionaries(
                                        {"user_message": json_values}, optional={"sly_data": json_values,
                                                                                  "chat_filter": json_values}),
                                              "_meta": json_values})
messages = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values, "method": methods | json_values},
    optional={"id": st.integers() | st.text(max_size=5) | json_values, "params": tool_params | json_values},
)
bodies = messages | st.lists(messages, max_size=3) | json_values
header_values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
headers = st.fixed_dictionaries({}, optional={
    "MCP-Protocol-Version": st.sampled_from(["2025-03-26", "2025-06-18", "2025-11-25"]) | header_values,
    "Accept": st.sampled_from(["application/json, text/event-stream", "text/event-stream", "*/*"]) | header_values,
    "Origin": st.sampled_from(["http://localhost:1", "null", "http://evil.example"]) | header_values,
    "Mcp-Session-Id": header_values,
    "Content-Type": header_values,
})


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(body=bodies, extra=headers)
def test_fuzzed_bodies_and_headers_get_no_5xx_and_no_hang(
    served: ServerProcess, body: Any, extra: dict[str, str]
) -> None:
    status, response_headers, raw = send(served, body, {**AUTH, **extra})  # the 30 s timeout: no hang
    assert status < 500, (status, raw[:300])
    if status not in (202, 204, 405) and response_headers.get("content-type", "").startswith("application/json"):
        reply = json.loads(raw)
        assert isinstance(reply, (dict, list))


def test_healthy_after_the_fuzz(served: ServerProcess) -> None:
    call = rpc("tools/call", {"name": "math_guy", "arguments": {"user_message": {"text": "6*7"}}})
    status, _, body = send(served, call)
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "The answer is 42."
    assert served.process.poll() is None
