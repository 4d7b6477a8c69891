"""Bad input against a real server: fuzzed requests and malformed HTTP find no 5xx and no
crash; hostile ``chat_context`` is dropped, bounded or refused with a clear error, over
gRPC and HTTP alike.

The fuzz runs hypothesis over ChatRequest-shaped JSON and over raw bytes, POSTed to the
gateway (and raw bytes sent as the gRPC request message). Every reply must be below 500
and, for a 200 stream, end with a response line or an error line that is not a server bug.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import load
from tests.support.fake_thread import Rig

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

CHAT = "/api/v1/echo/streaming_chat"
FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Http:
    """One keep-alive connection, reopened when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        for attempt in (1, 2):
            try:
                self.connection.request("POST", path, body, {"Content-Type": content_type})
                response = self.connection.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.HTTPException):
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def assert_no_server_error(status: int, raw: bytes) -> None:
    assert status < 500, (status, raw[:300])
    outcome = load.ChatOutcome("http", http_status=status)
    load.read_http_lines(outcome, raw)
    if status == 200:
        assert outcome.ok or outcome.clear, outcome
        assert outcome.code not in ("INTERNAL", "UNKNOWN", "TRUNCATED"), outcome
    else:
        assert outcome.code not in (None, "INTERNAL", "UNKNOWN") and outcome.message, (status, raw[:300])


# -- fuzz ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
enum_values = st.sampled_from(["HUMAN", "AI", "SYSTEM", "MAXIMAL", "minimal", "bogus", ""]) | st.integers()
origin_fields = {"tool": st.text(max_size=10) | json_values, "instantiation_index": json_values}
origins = st.lists(st.fixed_dictionaries({}, optional=origin_fields), max_size=3)
messages = st.fixed_dictionaries(
    {}, optional={"type": enum_values, "text": st.text(max_size=40) | json_values, "origin": origins | json_values}
)
chat_requests = st.fixed_dictionaries(
    {},
    optional={
        "user_message": messages | json_values,
        "userMessage": messages,
        "chat_filter": st.fixed_dictionaries({}, optional={"chat_filter_type": enum_values}) | json_values,
        "sly_data": st.dictionaries(st.text(max_size=8), json_values, max_size=4) | json_values,
        "chat_context": st.fixed_dictionaries(
            {},
            optional={
                "chat_histories": st.lists(
                    st.fixed_dictionaries({}, optional={"origin": origins, "messages": st.lists(messages, max_size=4)}),
                    max_size=3,
                )
                | json_values
            },
        )
        | json_values,
        "unknown_field": json_values,
    },
)


def test_fuzzed_chat_requests_find_no_5xx(rig: Rig) -> None:
    client = Http(rig.server.http_port)

    @FUZZ
    @given(chat_requests)
    def check(request: dict[str, Any]) -> None:
        status, raw = client.post(CHAT, json.dumps(request).encode())
        assert_no_server_error(status, raw)

    check()
    assert rig.server.process.poll() is None


def test_fuzzed_raw_bodies_find_no_5xx(rig: Rig) -> None:
    client = Http(rig.server.http_port)
    paths = st.sampled_from([CHAT, "/api/v1/echo/function", "/api/v1/echo/connectivity", "/api/v1/list"])
    content_types = st.sampled_from(["application/json", "application/json; charset=latin-1", "text/plain", ""])

    @FUZZ
    @given(
        st.binary(max_size=600) | st.text(max_size=300).map(str.encode),
        paths,
        content_types,
    )
    def check(body: bytes, path: str, content_type: str) -> None:
        status, raw = client.post(path, body, content_type)
        assert status < 500, (status, raw[:300])

    check()
    assert rig.server.process.poll() is None


def test_fuzzed_grpc_request_bytes_find_no_server_error(rig: Rig) -> None:
    with grpc.insecure_channel(rig.server.grpc_target) as channel:
        call = channel.unary_stream(load.QUALIFIED_CHAT)

        @settings(max_examples=60, deadline=None, database=None)
        @given(st.binary(max_size=300))
        def check(body: bytes) -> None:
            try:
                list(call(body, metadata=[("agent-name", "echo")], timeout=10))
            except grpc.RpcError as error:
                code = error.code()  # type: ignore[attr-defined]
                assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (
                    code,
                    error.details(),  # type: ignore[attr-defined]
                )

        check()
    assert rig.server.process.poll() is None


# -- malformed HTTP --------------------------------------------------------------------


def _raw_exchange(port: int, data: bytes, half_close: bool = False) -> bytes:
    """Send ``data`` as is; what came back before the server closed (or 5 s passed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return received


def _request(body: bytes, *headers: bytes, length: int | None = None) -> bytes:
    head = [b"POST " + CHAT.encode() + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close", *headers]
    if length is not None or not any(h.lower().startswith(b"transfer-encoding") for h in headers):
        head.append(b"Content-Length: %d" % (len(body) if length is None else length))
    return b"\r\n".join(head) + b"\r\n\r\n" + body


GOOD = b'{"user_message": {"text": "hello"}}'
JSON = b"Content-Type: application/json"
MALFORMED = {
    "truncated body": (_request(GOOD[:10], JSON, length=len(GOOD)), True),
    "wrong content type": (_request(GOOD, b"Content-Type: application/xml"), False),
    "json as text/plain": (_request(GOOD, b"Content-Type: text/plain"), False),
    "form content type": (_request(b"a=b", b"Content-Type: application/x-www-form-urlencoded"), False),
    "no content type": (_request(GOOD), False),
    "huge header": (_request(GOOD, JSON, b"X-Big: " + b"a" * 200_000), False),
    "many headers": (_request(GOOD, JSON, *(b"X-H%d: v" % i for i in range(5_000))), False),
    "deep nesting": (_request(b'{"sly_data": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001, JSON), False),
    "deep arrays": (_request(b'{"sly_data": {"a": ' + b"[" * 5_000 + b"]" * 5_000 + b"}}", JSON), False),
    "broken chunking": (_request(b"zz\r\nabc\r\n", JSON, b"Transfer-Encoding: chunked"), False),
    "bad utf-8": (_request(b'{"user_message": {"text": "\xff\xfe"}}', JSON), False),
    "bad request line": (b"\x00\x01\x02 nonsense\r\n\r\n", False),
    "body longer than its length": (_request(GOOD + b"trailing junk", JSON, length=len(GOOD)), False),
    "json, not an object": (_request(b"[1, 2, 3]", JSON), False),
    "huge text": (_request(b'{"user_message": {"text": "' + b"x" * (17 * 1024 * 1024) + b'"}}', JSON), False),
}

#: Sloppy but unambiguous: a JSON body without a Content-Type or as text/plain (curl
#: without -H; the gateway reads those as JSON), and a body whose first Content-Length
#: bytes are a whole request (the rest is the next, broken, request).
MAY_SUCCEED = {"no content type", "json as text/plain", "body longer than its length"}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_http_gets_a_4xx_never_a_5xx(rig: Rig, case: str) -> None:
    data, half_close = MALFORMED[case]
    received = _raw_exchange(rig.server.http_port, data, half_close)
    if received:  # a half-closed or unparseable request may just be closed
        status_line = received.split(b"\r\n", 1)[0]
        status = int(status_line.split()[1])
        assert status < 500, received[:400]
        if case not in MAY_SUCCEED:
            assert 400 <= status < 500, received[:400]
    else:
        assert half_close, f"{case}: the server closed without a status"
    # The server still serves.
    status, raw = Http(rig.server.http_port).post(CHAT, GOOD)
    assert status == 200 and json.loads(raw.splitlines()[-1])["response"]["text"] == "hello"
    assert rig.server.process.poll() is None
