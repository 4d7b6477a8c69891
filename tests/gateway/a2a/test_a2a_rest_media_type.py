"""The A2A HTTP+JSON binding answers in one media type, ``application/a2a+json``, its errors
too (issue 33 item 10): the SDK's errors, ours (an unknown network) and the host's refusals
(a body too large). One real server; its SSE stream stays ``text/event-stream``."""

from __future__ import annotations

import urllib.request

import pytest

from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow

A2A_JSON = "application/a2a+json"


def _type(method: str, url: str, body: bytes | None = None) -> tuple[int, str]:
    headers = {"A2A-Version": "1.0", **({"Content-Type": "application/json"} if body is not None else {})}
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"]


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("GET", "/a2a/hello_world/rest/tasks", None, 200),
    ("GET", "/a2a/hello_world/rest/tasks/nope", None, 404),  # the SDK's error
    ("POST", "/a2a/hello_world/rest/message:send", b"{bad", 400),  # the SDK's parse error
    ("GET", "/a2a/nobody/rest/tasks", None, 404),  # ours: no such network
    ("POST", "/a2a/hello_world/rest/message:send", b"x" * (16 * 1024 * 1024 + 1), 413),  # the host's refusal (16 MiB)
])
def test_every_answer_of_the_binding_has_one_media_type(server: ServerProcess, method: str, path: str,
                                                        body: bytes | None, status: int) -> None:
    assert _type(method, server.http_base + path, body) == (status, A2A_JSON)
