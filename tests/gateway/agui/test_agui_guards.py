"""AG-UI behind the host's guards and the service's credentials, on a real server.

With API keys on: no key is a 401 with ``WWW-Authenticate`` before any stream, a key that
may not call the network a 403; a thread is the caller's own (the same ``threadId`` under
another key starts afresh); a private network is absent unless the key names it. The
host's refusals (a ``Host`` not allowed: 421; a body over the limit: 413) are Status
bodies on this route as on every other.
"""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator

import pytest

from tests.gateway.agui.agui_client import post, run_input
from tests.support.servers import ServerProcess, start_server

pytestmark = pytest.mark.slow

ALL, MATH_ONLY, DEEP = "key-all-0123456789", "key-math-0123456789", "key-deep-0123456789"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"name": "all", "key": ALL, "agents": ["*"]},
        {"name": "hello", "key": MATH_ONLY, "agents": ["math_guy"]},
        {"name": "deep", "key": DEEP, "agents": ["deep/math_guy"]},
    ]}))
    env = {"AGENT_API_KEYS_FILE": str(keys), "AGENT_HTTP_ALLOWED_HOSTS": "127.0.0.1"}
    with start_server(http=True, env=env) as running:
        yield running


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_credentials_are_checked_before_the_stream(secured: ServerProcess) -> None:
    anonymous = post(secured.http_base, "math_guy", run_input("What is 6 * 7?"))
    assert anonymous.status == 401 and anonymous.body["code"] == 16
    assert anonymous.headers.get("www-authenticate", "").startswith("Bearer")
    refused = post(secured.http_base, "hello_world", run_input("hi"), _bearer(MATH_ONLY))
    assert refused.status == 403 and refused.body["code"] == 7
    allowed = post(secured.http_base, "math_guy", run_input("What is 6 * 7?"), _bearer(MATH_ONLY))
    assert allowed.status == 200 and allowed.text == "The answer is 42."


def test_a_thread_belongs_to_the_credentials_that_made_it(secured: ServerProcess) -> None:
    thread = uuid.uuid4().hex
    post(secured.http_base, "math_guy", run_input("What is 6 * 7?", thread), _bearer(ALL))
    again = post(secured.http_base, "math_guy", run_input("what did i ask?", thread), _bearer(ALL))
    assert again.text == "You asked: What is 6 * 7?"
    # The same threadId under another key is another thread.
    other = post(secured.http_base, "math_guy", run_input("what did i ask?", thread), _bearer(MATH_ONLY))
    assert other.status == 200 and other.text != again.text


def test_a_private_network_is_there_only_for_a_key_that_names_it(secured: ServerProcess) -> None:
    hidden = post(secured.http_base, "deep/math_guy", run_input("What is 6 * 7?"), _bearer(ALL))
    assert hidden.status == 404, hidden.body
    named = post(secured.http_base, "deep/math_guy", run_input("What is 6 * 7?"), _bearer(DEEP))
    assert named.status == 200 and named.text == "The answer is 42."


def _raw(server: ServerProcess, body: bytes, host: str) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    connection.request("POST", "/ag-ui/math_guy", body=body,
                       headers={"Host": host, "Content-Type": "application/json", **_bearer(ALL)})
    response = connection.getresponse()
    status, content = response.status, response.read()
    connection.close()
    return status, json.loads(content)


def test_the_hosts_refusals_are_status_bodies(secured: ServerProcess) -> None:
    body = json.dumps(run_input("What is 6 * 7?")).encode()
    status, answer = _raw(secured, body, "evil.example")
    assert status == 421 and answer["message"], answer
    status, answer = _raw(secured, b'{"pad": "' + b"x" * (17 << 20) + b'"}', f"127.0.0.1:{secured.http_port}")
    assert status == 413 and answer["message"], answer
