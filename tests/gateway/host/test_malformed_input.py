"""Malformed request bodies on every front-end of the HTTP port (REST, /mcp, A2A JSON-RPC,
A2A HTTP+JSON) are the client's mistake: a 4xx or the protocol's parse error, never a 500,
and never an ERROR line or a traceback in the server's log (issue 33 item 5).

Seen before the fix: 990- and 100,000-deep JSON was a 500 (RecursionError) on A2A
JSON-RPC, invalid UTF-8 and UTF-16 bodies were 500s on A2A HTTP+JSON, a 5,000-digit
integer in ``sly_data`` was a 500 on REST ("Exceeds the limit (4300 digits)"), and a
malformed HTTP request left aiohttp's "Error handling request" traceback in the log."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.servers import ServerProcess, start_server
from tests.support.waits import wait_for_log

#: Takes seconds (starts a server): not in `make test-fast`.
pytestmark = pytest.mark.slow

PARSE_ERROR = -32700


#: One client for the module: making one per request costs ~0.4 s here (its TLS context).
_CLIENT = httpx.Client(timeout=15)


@pytest.fixture(scope="module")
def json_logged() -> Iterator[ServerProcess]:
    with start_server(env={"AGENT_SERVICE_LOG_JSON": "1"}, http=True) as started:
        yield started
        _CLIENT.close()  # no kept-alive connection for the server's shutdown to wait out


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _bodies(envelope: Callable[[str], str]) -> dict[str, bytes]:
    """The hostile bodies, each with its bad part placed where ``envelope`` puts a value."""
    good = envelope('"hi"')
    return {
        "deep990": envelope(_deep(990)).encode(),
        "deep100000": envelope(_deep(100_000)).encode(),
        "invalid_utf8": good.encode().replace(b'"hi"', b'"h\xff\xfei"'),
        "utf16": good.encode("utf-16"),
        "digits5000": envelope("1" + "0" * 5000).encode(),
        "digits400": envelope("1" + "0" * 400).encode(),  # too big for a float: a Struct number is one
        "nan": envelope("NaN").encode(),  # not JSON; protobuf cannot carry it in a Struct
        "overflow": envelope("1e999").encode(),  # infinity
    }


CASES = list(_bodies(lambda value: value))


def _rest_body(value: str) -> str:
    return '{"user_message": {"text": "hi"}, "sly_data": {"x": ' + value + "}}"


def _mcp_body(value: str) -> str:
    return ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            '"params": {"name": "echo", "arguments": {"user_message": {"text": ' + value + "}}}}")


def _a2a_message(value: str) -> str:
    message = '{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "metadata": {"x": ' + value + "}}"
    return '{"message": ' + message + "}"


def _a2a_jsonrpc_body(value: str) -> str:
    return '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ' + _a2a_message(value) + "}"


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
A2A_HEADERS = {"A2A-Version": "1.0"}


def _post(server: ServerProcess, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return _CLIENT.post(server.http_base + path, content=body, headers={"Content-Type": "application/json", **headers})


def _jsonrpc_code(response: httpx.Response) -> Any:
    return response.json().get("error", {}).get("code")


@pytest.mark.parametrize("case", CASES)
def test_rest(json_logged: ServerProcess, case: str) -> None:
    response = _post(json_logged, "/api/v1/echo/streaming_chat", _bodies(_rest_body)[case], {})
    assert response.status_code == 400, response.text
    assert response.json()["code"] == 3, response.text  # INVALID_ARGUMENT


@pytest.mark.parametrize("case", CASES)
def test_mcp(json_logged: ServerProcess, case: str) -> None:
    response = _post(json_logged, "/mcp", _bodies(_mcp_body)[case], MCP_HEADERS)
    assert response.status_code == 400, response.text
    assert _jsonrpc_code(response) == PARSE_ERROR, response.text


@pytest.mark.parametrize("path", ["/a2a/echo", "/a2a"])
@pytest.mark.parametrize("case", CASES)
def test_a2a_jsonrpc(json_logged: ServerProcess, case: str, path: str) -> None:
    response = _post(json_logged, path, _bodies(_a2a_jsonrpc_body)[case], A2A_HEADERS)
    assert response.status_code < 500, response.text
    assert _jsonrpc_code(response) == PARSE_ERROR, response.text


@pytest.mark.parametrize("case", CASES)
def test_a2a_rest(json_logged: ServerProcess, case: str) -> None:
    response = _post(json_logged, "/a2a/echo/rest/message:send", _bodies(_a2a_message)[case], A2A_HEADERS)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT", response.text  # the SDK's own shape


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": "x"}}}', -32602),
        ("[1, 2]", -32600),
        ('"text"', -32600),
        ('{"jsonrpc": "2.0", "id": 1}', -32600),
    ],
    ids=["bad-params", "batch", "not-an-object", "no-method"],
)
def test_a2a_sdk_refusals(json_logged: ServerProcess, body: str, code: int) -> None:
    """Requests the a2a-sdk refuses itself (it logged each as an ERROR traceback): its error
    answers, and (checked below) no ERROR line."""
    response = _post(json_logged, "/a2a/echo", body.encode(), A2A_HEADERS)
    assert response.status_code == 200 and _jsonrpc_code(response) == code, response.text


FRONT_ENDS = {
    "rest": ("/api/v1/echo/streaming_chat", {}),
    "mcp": ("/mcp", MCP_HEADERS),
    "a2a_jsonrpc": ("/a2a/echo", A2A_HEADERS),
    "a2a_rest": ("/a2a/echo/rest/message:send", A2A_HEADERS),
}


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_a_body_aiohttp_cannot_decode_is_400(json_logged: ServerProcess, front_end: str) -> None:
    """``Content-Encoding: gzip`` over bytes that are not gzip: aiohttp's decoding error
    was a 500 and two ERROR tracebacks (the host's and aiohttp's)."""
    path, headers = FRONT_ENDS[front_end]
    response = _post(json_logged, path, b"this is not gzip", {**headers, "Content-Encoding": "gzip"})
    assert response.status_code == 400, response.text
    assert "could not be read" in response.text


def test_a_header_that_is_not_utf8_echoed_in_an_error_is_no_500(json_logged: ServerProcess) -> None:
    """aiohttp decodes a header's non-UTF-8 byte as a lone surrogate; /mcp echoed the bad
    MCP-Protocol-Version into its error body, whose encoding failed (500)."""
    request = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
               b"MCP-Protocol-Version: \xff\r\nContent-Length: 2\r\n\r\n{}")
    with socket.create_connection(("127.0.0.1", json_logged.http_port), timeout=10) as sock:
        sock.sendall(request)
        assert b" 400 " in sock.recv(4096).split(b"\r\n", 1)[0]


@pytest.mark.parametrize("request_id", [{"a": 1}, [1], True, None])
def test_mcp_cancellation_naming_no_request_id_is_acknowledged(json_logged: ServerProcess, request_id: Any) -> None:
    """``notifications/cancelled`` whose requestId is an object was a 500 (unhashable key)."""
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    response = _post(json_logged, "/mcp", json.dumps(body).encode(), MCP_HEADERS)
    assert response.status_code == 202, response.text


_HELLO = {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "hi"}]}


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("SendMessage", {"message": {**_HELLO, "metadata": {"neuro_san": "x"}}}, -32602),
        ("SendMessage", {"message": {**_HELLO, "metadata": {"neuro_san": {"sly_data": "x"}}}}, -32602),
        ("SendStreamingMessage", {"message": {**_HELLO, "metadata": {"neuro_san": {"chat_context": 5}}}}, -32602),
        ("GetExtendedAgentCard", {}, -32004),
    ],
    ids=["neuro_san-not-object", "sly_data-not-object", "chat_context-not-object", "extended-card"],
)
def test_a2a_requests_refused_by_the_executor_or_the_card(
    json_logged: ServerProcess, method: str, params: dict[str, Any], code: int
) -> None:
    """Refused in the SDK's task (our executor's InvalidParamsError: it logged an ERROR
    traceback for its producer and one for its consumer) or by its capability check (an
    ERROR line): the error answer, and (checked below) no ERROR line."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = _post(json_logged, "/a2a/echo", json.dumps(body).encode(), A2A_HEADERS)
    assert response.status_code == 200 and _jsonrpc_code(response) == code, response.text


def test_well_formed_bodies_still_served(json_logged: ServerProcess) -> None:
    """The guards refuse only what they name: a sane body with numbers and some nesting passes."""
    sly = json.dumps({"n": 10**30, "f": 1.5, "x": [[[[{"a": [1, 2]}]]]]})
    body = '{"user_message": {"text": "hello"}, "sly_data": ' + sly + "}"
    response = _post(json_logged, "/api/v1/echo/streaming_chat", body.encode(), {})
    assert response.status_code == 200, response.text


def _unparseable_request(server: ServerProcess) -> None:
    """A request aiohttp cannot parse; waits until its WARNING is in the log we read, so that
    every line the server wrote before it has been read too (the pipe keeps their order)."""
    logged = server.log().count("Invalid header token")
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
        assert b" 400 " in sock.recv(4096).split(b"\r\n", 1)[0]
    assert wait_for_log(server, "Invalid header token", count=logged + 1), server.log()[-3000:]


def test_malformed_http_is_one_warning(json_logged: ServerProcess) -> None:
    """A request aiohttp cannot parse is 400, and one WARNING line, not a traceback."""
    _unparseable_request(json_logged)
    warned = [line for line in json_logged.log().splitlines() if '"logger": "aiohttp.server"' in line]
    assert any("Invalid header token" in line for line in warned), warned
    assert all('"level": "WARNING"' in line and "Traceback" not in line for line in warned), warned


def test_log_has_no_error_and_no_traceback(json_logged: ServerProcess) -> None:
    """Runs last: every request above was the client's mistake."""
    _unparseable_request(json_logged)  # a marker: once its line is read, so is everything before
    log = json_logged.log()
    assert "Traceback" not in log, log[-6000:]
    errors = [line for line in log.splitlines() if '"level": "ERROR"' in line]
    assert not errors, "\n".join(errors)[-6000:]
