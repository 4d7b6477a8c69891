"""Fuzzed JSON-RPC bodies and headers against the A2A binding of a real server: never a
5xx, never an internal error, never a hang, and the server healthy afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fake_thread import Rig

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
INTERNAL_ERROR = -32603

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
methods = st.sampled_from([
    "SendMessage", "SendStreamingMessage", "GetTask", "CancelTask", "SubscribeToTask", "ListTasks",
    "GetExtendedAgentCard", "CreateTaskPushNotificationConfig",
    "message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe", "nope", "",
])
parts = st.lists(
    st.fixed_dictionaries({"text": st.text(max_size=30)})
    | st.fixed_dictionaries({"data": json_values})
    | st.fixed_dictionaries({"kind": st.sampled_from(["text", "data", "file", "bogus"]), "text": st.text(max_size=10)})
    | json_values,
    max_size=3,
)
neuro_san_options = st.fixed_dictionaries({}, optional={
    "chat_context": json_values | st.fixed_dictionaries({"chat_histories": json_values}),
    "sly_data": json_values,
    "thinking": json_values,
}) | json_values
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["ROLE_USER", "user", "ROLE_AGENT", "bogus", 7]), "parts": parts},
    optional={
        "messageId": st.text(max_size=12) | json_values,
        "contextId": st.text(max_size=12) | json_values,
        "taskId": st.text(max_size=12),
        "kind": st.just("message"),
        "metadata": st.fixed_dictionaries({"neuro_san": neuro_san_options}) | json_values,
    },
)
params = (
    st.fixed_dictionaries({"message": messages}, optional={"configuration": json_values, "metadata": json_values})
    | st.fixed_dictionaries({"id": st.text(max_size=12) | json_values}, optional={"historyLength": json_values})
    | json_values
)
bodies = st.fixed_dictionaries(
    {"method": methods},
    optional={"jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values, "id": json_values, "params": params},
)
headers = st.fixed_dictionaries({}, optional={
    "A2A-Version": st.sampled_from(["1.0", "0.3", "", "9.9", "1.0, 0.3"]),
    "Content-Type": st.sampled_from(["application/json", "text/plain", "application/a2a+json", ""]),
    "Authorization": st.sampled_from(["Bearer x", "Basic", ""]),
    # Any printable value an HTTP client can send: no leading or trailing blank (httpx
    # refuses those before they reach the server, which would fail the test, not the server).
    "request_id": st.from_regex(r"([!-~]([ -~]{0,18}[!-~])?)?", fullmatch=True),
})


@pytest.fixture(scope="module")
def client(rig: Rig) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=rig.server.http_base, timeout=20) as http:
        yield http


def _errors(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC error objects of a JSON or SSE answer."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        documents = [json.loads(frame) for frame in frames]
    else:
        documents = [response.json()]
    return [d["error"] for d in documents if isinstance(d, dict) and "error" in d]


def _check(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    for error in _errors(response):
        assert isinstance(error.get("code"), int) and error.get("message"), error
        assert error["code"] != INTERNAL_ERROR, error


@FUZZ
@given(body=bodies, extra=headers)
def test_fuzzed_jsonrpc_bodies_and_headers(client: httpx.Client, body: dict[str, Any], extra: dict[str, str]) -> None:
    _check(client.post("/a2a/echo", content=json.dumps(body).encode(), headers=extra))


@FUZZ
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzzed_raw_bodies(client: httpx.Client, raw: bytes) -> None:
    _check(client.post("/a2a/echo", content=raw, headers={"Content-Type": "application/json"}))


def test_healthy_after_the_fuzz(client: httpx.Client) -> None:
    assert client.get("/healthz").status_code == 200
    reply = client.post("/a2a/echo", headers={"A2A-Version": "1.0"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "still here"}]}},
    })
    assert reply.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
