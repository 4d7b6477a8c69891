"""Small HTTP helpers for the gateway's end-to-end tests (standard library only)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.waits import wait_until

FIXTURES = Path(__file__).parent / "fixtures" / "gateway"
PROBE_ARGS = [
    "--manifest",
    str(FIXTURES / "manifest.hocon"),
    "--tool-path",
    str(FIXTURES / "coded_tools"),
]


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def lines(self) -> list[Any]:
        text = self.body.decode()
        assert text.endswith("\n"), text
        return [json.loads(line) for line in text.splitlines()]


def call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Reply:
    """One request; a dict/list body is sent as JSON with Content-Type application/json."""
    all_headers = dict(headers or {})
    raw: bytes | None
    if body is None or isinstance(body, bytes):
        raw = body
    else:
        raw = json.dumps(body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=raw, headers=all_headers)
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


def chat(port: int, agent: str, text: str, maximal: bool = False, **headers: str) -> Reply:
    body: dict[str, Any] = {"user_message": {"text": text}}
    if maximal:
        body["chat_filter"] = {"chat_filter_type": "MAXIMAL"}
    return call(port, "POST", f"/api/v1/{agent}/streaming_chat", body, headers)


def open_stream(port: int, agent: str, body: dict[str, Any]) -> tuple[http.client.HTTPConnection, Iterator[bytes]]:
    """Start a streaming chat and return the connection and an iterator over its lines."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(
        "POST", f"/api/v1/{agent}/streaming_chat", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    assert response.status == 200, response.read()

    def lines() -> Iterator[bytes]:
        while True:
            line = response.readline()
            if not line:
                return
            yield line

    return connection, lines()


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    return wait_until(predicate, timeout)


def assert_status(reply: Reply, http_status: int, code: int) -> dict[str, Any]:
    """The reply is the Status body with this HTTP status and gRPC code."""
    assert reply.status == http_status, (reply.status, reply.body)
    assert reply.headers["Content-Type"] == "application/json"
    status = reply.json()
    assert set(status) == {"code", "message", "details"}, status
    assert status["code"] == code, status
    assert isinstance(status["message"], str) and status["message"]
    assert isinstance(status["details"], list)
    return dict(status)
