"""The sessionless revision (2026-07-28) on ``/mcp`` beside the handshake: the official
SDK's client in each of its modes, the raw opening a hosted connector sends (written from
the revision's Streamable HTTP page), the errors the revision prescribes, and fuzzed
modern requests (no 5xx, no hang)."""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.inbound import encode_header_value

from tests.support.mcp import ADMIN_KEY, USER_KEY, mcp_client, mcp_server
from tests.support.servers import ServerProcess

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "connector", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with mcp_server(Path(tmp_path_factory.mktemp("mcp-modern"))) as server:
        yield server


def request(method: str, params: dict[str, Any] | None = None, request_id: Any = 1,
            meta: dict[str, Any] | None = META) -> dict[str, Any]:
    body = dict(params or {})
    if meta is not None:
        body["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def _printable(text: str) -> str:
    """``text`` as a header can carry it: what is not printable ASCII (control characters,
    which http.client refuses to send, and non-ASCII) becomes ``?``."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def headers_for(body: dict[str, Any], key: str | None = USER_KEY, **extra: str) -> dict[str, str]:
    """The headers a conforming client mirrors from its body (Streamable HTTP, "Request Metadata")."""
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": _printable(str(body.get("method")))}
    params = body.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if isinstance(name, str):
        headers["Mcp-Name"] = encode_header_value(name)  # base64 sentinel for what is not plain ASCII
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return {**headers, **extra}


def send(server: ServerProcess, body: Any, headers: dict[str, str] | list[tuple[str, str]],
         method: str = "POST") -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
        connection.putrequest(method, "/mcp")
        pairs = headers.items() if isinstance(headers, dict) else headers
        for name, value in pairs:
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(raw)))
        connection.endheaders(raw)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def exchange(server: ServerProcess, body: dict[str, Any], key: str | None = USER_KEY,
             **extra: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    status, headers, raw = send(server, body, headers_for(body, key, **extra))
    return status, headers, json.loads(raw)


# -- the official SDK's client ---------------------------------------------------------


@pytest.mark.parametrize(("mode", "expected"), [("auto", MODERN), (MODERN, MODERN), ("legacy", "2025-11-25")])
def test_the_sdk_client_in_each_mode_lists_and_calls_a_network(served: ServerProcess, mode: str, expected: str) -> None:
    async def scenario() -> None:
        async with mcp_client(served, mode=mode) as client:
            assert client.protocol_version == expected
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"math_guy", "parrot", "tools__math_guy"}
            result = await client.call_tool("math_guy", {"user_message": {"text": "6 * 7"}})
            assert not result.is_error and result.content[0].text == "The answer is 42."
            assert result.structured_content is not None and result.structured_content["sly_data"] == {"equals": 42}
            if mode == "auto":
                assert client.server_info is not None and client.server_info.name == "Neuro-san-MCPServer"

    asyncio.run(scenario())


# -- the raw opening of a hosted connector ---------------------------------------------


def test_a_hosted_connector_opening_discover_then_list_and_call_without_a_session(served: ServerProcess) -> None:
    status, headers, reply = exchange(served, request("server/discover", request_id="d1"))
    assert status == 200, reply
    assert "mcp-session-id" not in headers  # the revision has no sessions: none minted
    result = reply["result"]
    assert reply["id"] == "d1" and result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN]
    assert "tools" in result["capabilities"]
    assert result["cacheScope"] == "public" and result["ttlMs"] > 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "Neuro-san-MCPServer"

    status, headers, reply = exchange(served, request("tools/list", request_id=2))
    assert status == 200 and "mcp-session-id" not in headers, reply
    listing = reply["result"]
    assert listing["resultType"] == "complete" and listing["ttlMs"] > 0
    assert listing["cacheScope"] == "private"  # the tools depend on the caller's key
    assert {tool["name"] for tool in listing["tools"]} == {"math_guy", "parrot", "tools__math_guy"}

    call = request("tools/call", {"name": "math_guy", "arguments": {"user_message": {"text": "6 * 7"}}}, 3)
    status, headers, reply = exchange(served, call)
    assert status == 200 and "mcp-session-id" not in headers, reply
    assert reply["result"]["resultType"] == "complete"
    assert reply["result"]["content"] == [{"type": "text", "text": "The answer is 42."}]
    assert "ttlMs" not in reply["result"]  # a call's result is not cacheable

    # The private network is listed, and callable, only for the key that may call it.
    status, _, reply = exchange(served, request("tools/list"), key=ADMIN_KEY)
    assert "deep__math_guy" in {tool["name"] for tool in reply["result"]["tools"]}


def test_progress_goes_on_the_requests_own_stream_then_the_result(served: ServerProcess) -> None:
    meta = {**META, "progressToken": "p1"}
    call = request("tools/call", {"name": "math_guy", "arguments": {"user_message": {"text": "6 * 7"}}}, 9, meta)
    status, headers, raw = send(served, call, headers_for(call))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[len("data: "):]) for line in raw.decode().splitlines() if line.startswith("data: ")]
    progress = [event for event in events if event.get("method") == "notifications/progress"]
    assert progress and all(event["params"]["progressToken"] == "p1" for event in progress)
    assert events[-1]["id"] == 9 and events[-1]["result"]["resultType"] == "complete"
    assert events[-1]["result"]["content"][0]["text"] == "The answer is 42."


def test_a_call_without_a_credential_is_401(served: ServerProcess) -> None:
    status, _, reply = exchange(served, request("tools/list"), key=None)
    assert status == 401 and reply["error"]["code"] == -32001


# -- what the revision refuses -----------------------------------------------------------


@pytest.mark.parametrize("case", ["method", "name", "name-missing", "meta-version"])
def test_headers_that_disagree_with_the_body_are_400_header_mismatch(served: ServerProcess, case: str) -> None:
    call = request("tools/call", {"name": "math_guy", "arguments": {"user_message": {"text": "1"}}}, 5)
    body, headers = {
        "method": (request("tools/list", request_id=5),
                   headers_for(request("tools/list"), **{"Mcp-Method": "tools/call"})),
        "name": (call, headers_for(call, **{"Mcp-Name": "parrot"})),
        "name-missing": (call, {k: v for k, v in headers_for(call).items() if k != "Mcp-Name"}),
        "meta-version": (request("tools/list", request_id=5,
                                 meta={**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
                         headers_for(request("tools/list"))),
    }[case]
    status, _, raw = send(served, body, headers)
    reply = json.loads(raw)
    assert status == 400 and reply["error"]["code"] == -32020, reply
    assert reply["id"] == 5


def test_a_modern_body_without_the_version_header_is_a_header_mismatch(served: ServerProcess) -> None:
    # Its _meta makes it modern (the revision's dual-era rule), so it is not served as 2025-03-26.
    body = request("tools/list", request_id=6)
    headers = {k: v for k, v in headers_for(body).items() if k != "MCP-Protocol-Version"}
    status, _, raw = send(served, body, headers)
    reply = json.loads(raw)
    assert status == 400 and reply["error"]["code"] == -32020 and reply["id"] == 6, reply


def test_a_routing_header_sent_twice_is_a_header_mismatch(served: ServerProcess) -> None:
    body = request("tools/list")
    pairs = [*headers_for(body).items(), ("Mcp-Method", "tools/list")]
    status, _, raw = send(served, body, pairs)
    assert status == 400 and json.loads(raw)["error"]["code"] == -32020


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (request("tools/list", meta=None), 400, -32602),  # no _meta at all
        (request("tools/list", meta={"io.modelcontextprotocol/protocolVersion": MODERN}), 400, -32602),
        (request("no/such/method"), 404, -32601),
        (request("ping"), 404, -32601),  # removed at 2026-07-28
        (request("initialize", {"protocolVersion": MODERN, "capabilities": {}}), 404, -32601),
        (request("logging/setLevel", {"level": "info"}), 404, -32601),
        (request("tools/call", {"arguments": {}}), 400, -32602),  # no tool name
        (request("tools/call", {"name": "nope", "arguments": {}}), 400, -32602),  # unknown tool
        ([request("tools/list")], 400, -32600),  # no batches
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, 400, -32600),  # clients post no responses
        (b"{not json", 400, -32700),
    ],
    ids=["no-meta", "no-capabilities", "unknown-method", "ping", "initialize", "set-level", "no-name",
         "unknown-tool", "batch", "response", "parse-error"],
)
def test_malformed_modern_requests_get_the_prescribed_error(
    served: ServerProcess, body: Any, status: int, code: int
) -> None:
    template = body if isinstance(body, dict) and "method" in body else request("tools/list")
    got, _, raw = send(served, body, headers_for(template))
    reply = json.loads(raw)
    assert got == status and reply["error"]["code"] == code, (got, reply)


def test_notifications_are_acknowledged_and_get_delete_are_405(served: ServerProcess) -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert send(served, cancel, headers_for(cancel))[0] == 202
    for verb in ("GET", "DELETE"):
        status, headers, _ = send(served, None, headers_for(request("tools/list"), **{"Mcp-Session-Id": "s"}), verb)
        assert status == 405 and headers["allow"] == "POST", verb


def test_without_an_issuer_no_oauth_metadata_is_published(served: ServerProcess) -> None:
    # Hosts start an OAuth flow whenever the document exists: with API keys only, it must not.
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        connection = http.client.HTTPConnection("127.0.0.1", served.http_port, timeout=30)
        connection.request("GET", path)
        assert connection.getresponse().status == 404, path
        connection.close()
    status, headers, _ = send(served, request("tools/list"), headers_for(request("tools/list"), key=None))
    assert status == 401 and headers["www-authenticate"] == "Bearer"


def test_an_unknown_version_header_names_both_eras(served: ServerProcess) -> None:
    body = request("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    status, _, raw = send(served, body, headers_for(body, **{"MCP-Protocol-Version": "2099-01-01"}))
    reply = json.loads(raw)
    assert status == 400 and reply["error"]["code"] == -32022
    assert reply["error"]["data"]["supported"][0] == MODERN and "2025-11-25" in reply["error"]["data"]["supported"]


# -- fuzz --------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
names = st.sampled_from(["math_guy", "parrot", "nope", ""]) | st.text(max_size=5)
metas = st.fixed_dictionaries({}, optional={
    "io.modelcontextprotocol/protocolVersion": st.sampled_from([MODERN, "2025-11-25"]) | json_values,
    "io.modelcontextprotocol/clientCapabilities": st.just({}) | json_values,
    "io.modelcontextprotocol/clientInfo": json_values,
    "progressToken": st.text(max_size=4) | json_values,
}) | json_values
modern_params = st.fixed_dictionaries({"_meta": metas}, optional={
    "name": names | json_values, "arguments": st.fixed_dictionaries({"user_message": json_values}) | json_values,
    "cursor": json_values,
}) | json_values
modern_methods = st.sampled_from(["server/discover", "tools/list", "tools/call", "prompts/list", "resources/list",
                                  "ping", "initialize", "notifications/cancelled"]) | st.text(max_size=10)
modern_bodies = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0") | json_values, "method": modern_methods | json_values},
    optional={"id": st.integers() | st.text(max_size=5) | json_values, "params": modern_params},
) | st.lists(json_values, max_size=2) | json_values
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(body=modern_bodies, method_header=header_text, name_header=header_text,
       mirror=st.booleans())
def test_fuzzed_modern_requests_get_no_5xx_and_no_hang(
    served: ServerProcess, body: Any, method_header: str, name_header: str, mirror: bool
) -> None:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": MODERN,
               "Authorization": f"Bearer {USER_KEY}"}
    if mirror and isinstance(body, dict):  # a conforming client's headers, so the body's checks are reached too
        headers.update(headers_for(body))
    else:
        headers.update({"Mcp-Method": method_header, "Mcp-Name": name_header})
    status, response_headers, raw = send(served, body, headers)  # the 30 s timeout: no hang
    assert status < 500, (status, raw[:300])
    if response_headers.get("content-type", "").startswith("application/json"):
        assert isinstance(json.loads(raw), dict)


def test_healthy_after_the_fuzz(served: ServerProcess) -> None:
    call = request("tools/call", {"name": "math_guy", "arguments": {"user_message": {"text": "6*7"}}})
    status, _, reply = exchange(served, call)
    assert status == 200 and reply["result"]["content"][0]["text"] == "The answer is 42."
    assert served.process.poll() is None


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_prompts_get_and_resources_read_of_unknown_names_get_mcps_errors(served: ServerProcess, mode: str) -> None:
    """The capabilities are advertised (empty), so an unknown name is -32602 (prompts/get)
    and -32002 (resources/read, resource not found), never -32601, in both eras."""
    from mcp.shared.exceptions import MCPError

    async def scenario() -> None:
        async with mcp_client(served, mode=mode) as client:
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt("nope")
            assert prompt.value.error.code == -32602, prompt.value.error
            with pytest.raises(MCPError) as resource:
                await client.read_resource("file:///nope")
            assert resource.value.error.code == -32002, resource.value.error

    asyncio.run(scenario())
