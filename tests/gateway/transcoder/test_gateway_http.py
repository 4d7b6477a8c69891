"""The HTTP gateway end to end: a real ``neuro-san serve`` with its in-process gateway.

The bundled example networks plus ``probe`` (tests/fixtures/gateway), whose coded tool
reports the request metadata it saw and can wait to be cancelled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.gateway_http_support import (
    FIXTURES,
    PROBE_ARGS,
    assert_status,
    call,
    chat,
    open_stream,
    wait_for,
)
from tests.support.servers import INVOKERS, ServerProcess, invoker_env, start_server

FORWARDED = "request_id user_id authorization x-trace"


@pytest.fixture(scope="module", params=INVOKERS)
def invoker(request: pytest.FixtureRequest) -> str:
    """Every test runs against both invokers of the gateway inside ``serve``."""
    return str(request.param)


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory, invoker: str) -> Path:
    return tmp_path_factory.mktemp(f"markers-{invoker}")


@pytest.fixture(scope="module")
def served(markers: Path, invoker: str) -> Iterator[ServerProcess]:
    env = {"GATEWAY_TEST_MARKER_DIR": str(markers), "AGENT_FORWARDED_REQUEST_METADATA": FORWARDED,
           **invoker_env(invoker)}  # fmt: skip
    with start_server(http=True, env=env, extra_args=PROBE_ARGS) as server:
        yield server


@pytest.fixture(scope="module")
def port(served: ServerProcess) -> int:
    return served.http_port


# ---- routes -------------------------------------------------------------------------


def test_list(port: int) -> None:
    reply = call(port, "GET", "/api/v1/list")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    assert int(reply.headers["Content-Length"]) == len(reply.body)
    names = [agent["agent_name"] for agent in reply.json()["agents"]]
    assert names == sorted(names) and {"hello_world", "math_guy", "probe"} <= set(names)
    assert "deep/math_guy" not in names  # served, but not public
    assert b" " not in reply.body.split(b'"description"')[0]  # compact


@pytest.mark.parametrize("agent", ["math_guy", "deep/math_guy", "deep%2Fmath_guy"])
def test_function_including_sub_folder_names(port: int, agent: str) -> None:
    reply = call(port, "GET", f"/api/v1/{agent}/function")
    assert reply.status == 200, reply.body
    function = reply.json()["function"]
    assert function["description"] == "I do arithmetic."
    assert function["parameters"]["required"] == ["expression"]


def test_connectivity(port: int) -> None:
    reply = call(port, "GET", "/api/v1/deep/math_guy/connectivity")
    assert reply.status == 200
    data = reply.json()
    assert [(i["origin"], i.get("tools", []), i["display_as"]) for i in data["connectivity_info"]] == [
        ("math_guy", ["calculator"], "llm_agent"),
        ("calculator", [], "coded_tool"),
    ]
    assert data["metadata"]["tags"] == ["example", "offline", "coded_tool"]


def test_minimal_stream_is_one_framework_line(port: int) -> None:
    reply = chat(port, "hello_world", "hello there")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json-lines"
    [line] = reply.lines()
    assert set(line) == {"response"}
    message = line["response"]
    assert message["type"] == "AGENT_FRAMEWORK"
    assert "hello there" in message["text"]
    history = message["chat_context"]["chat_histories"][0]
    assert [m["type"] for m in history["messages"]] == ["HUMAN", "AI", "AI"]  # the tool's output is kept
    assert history["origin"] == [{"tool": "announcer", "instantiation_index": 1}]


def test_maximal_stream_lines_and_whole_struct_numbers(port: int) -> None:
    reply = chat(port, "math_guy", "6 * 7", maximal=True)
    assert reply.status == 200
    lines = reply.lines()
    types = [line["response"]["type"] for line in lines]
    assert types[0] == "SYSTEM" and types[-1] == "AGENT_FRAMEWORK" and "AGENT_TOOL_RESULT" in types
    assert all(line["request"]["chat_filter"]["chat_filter_type"] == "MAXIMAL" for line in lines)
    final = lines[-1]["response"]
    assert final["sly_data"] == {"equals": 42}
    assert b'"equals":42}' in reply.body and b"42.0" not in reply.body


def test_continuation_through_http(port: int) -> None:
    first = chat(port, "hello_world", "first").lines()[-1]["response"]
    body = {"user_message": {"text": "second"}, "chat_context": first["chat_context"]}
    reply = call(port, "POST", "/api/v1/hello_world/streaming_chat", body)
    messages = reply.lines()[-1]["response"]["chat_context"]["chat_histories"][0]["messages"]
    assert [m["text"] for m in messages if m["type"] == "HUMAN"] == ["first", "second"]


def test_sse(port: int) -> None:
    reply = call(
        port, "POST", "/api/v1/math_guy/streaming_chat",
        {"user_message": {"text": "1 + 1"}, "chat_filter": {"chat_filter_type": "maximal"}},
        {"Accept": "text/event-stream"},
    )
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/event-stream"
    assert reply.headers["X-Accel-Buffering"] == "no"
    frames = reply.body.decode().split("\n\n")
    assert frames[-1] == ""
    events = [json.loads(frame.removeprefix("data: ")) for frame in frames[:-1]]
    assert all(frame.startswith("data: ") for frame in frames[:-1])
    assert events[-1]["response"]["type"] == "AGENT_FRAMEWORK" and len(events) > 3


def test_json_in_variants(port: int) -> None:
    camel = call(port, "POST", "/api/v1/echo/streaming_chat",
                 {"userMessage": {"text": "camel"}, "chatFilter": {"chatFilterType": "bogus"}})
    [line] = camel.lines()  # an unknown filter reads as MINIMAL: one line
    assert line["response"]["text"] == "camel"
    empty = call(port, "POST", "/api/v1/echo/streaming_chat", b"", {"Content-Type": "application/json"})
    assert empty.status == 200 and empty.lines() == [{}]


# ---- errors -------------------------------------------------------------------------


def test_unknown_agent_is_404_for_unary_and_stream(port: int) -> None:
    status = assert_status(call(port, "GET", "/api/v1/nobody/function"), 404, 5)
    assert "nobody" in status["message"]
    assert_status(chat(port, "no/body", "hi"), 404, 5)


def test_unknown_route_is_404(port: int) -> None:
    for path in ("/api/v1/function", "/nothing", "/api/v2/list"):
        assert assert_status(call(port, "GET", path), 404, 5)["message"] == "Not Found"


def test_wrong_method_is_405_with_allow(port: int) -> None:
    reply = call(port, "GET", "/api/v1/echo/streaming_chat")
    assert_status(reply, 405, 12)
    assert reply.headers["Allow"] == "POST"
    assert call(port, "DELETE", "/api/v1/list").headers["Allow"] == "GET"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"user_message": ', "body"),
        (b"[1]", "body"),
        (b'{"user_message": {"text": 5}}', "user_message.text"),
        (b'{"sly_data": "x"}', "sly_data"),
    ],
)
def test_bad_json_is_400_with_a_short_message(port: int, body: bytes, field: str) -> None:
    reply = call(port, "POST", "/api/v1/echo/streaming_chat", body, {"Content-Type": "application/json"})
    status = assert_status(reply, 400, 3)
    assert len(status["message"]) < 120 and "Available Fields" not in status["message"]
    assert status["details"][0]["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert status["details"][0]["field_violations"][0]["field"] == field


@pytest.mark.parametrize(
    "content_type",
    ["multipart/form-data; boundary=x", "application/xml", "application/octet-stream", "image/png"],
)
def test_non_json_content_type_is_415(port: int, content_type: str) -> None:
    body = b'{"user_message":{"text":"x"}}'
    reply = call(port, "POST", "/api/v1/echo/streaming_chat", body, {"Content-Type": content_type})
    assert_status(reply, 415, 3)


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "application/vnd.api+json",
        "text/json",
        "text/plain",
        "application/x-www-form-urlencoded",  # what `curl -d` sends without -H
        None,
    ],
)
def test_json_bodies_are_read_whatever_the_usual_content_type(port: int, content_type: str | None) -> None:
    """Upstream parses any body as JSON, so users' `curl -d '{...}'` works without -H."""
    headers = {"Content-Type": content_type} if content_type else {}
    reply = call(port, "POST", "/api/v1/echo/streaming_chat", b'{"user_message":{"text":"as json"}}', headers)
    assert reply.status == 200, reply.body
    assert reply.lines()[-1]["response"]["text"] == "as json"
    # Still JSON: a form-encoded body is a 400 (bad JSON), not silently read as a form.
    if content_type == "application/x-www-form-urlencoded":
        bad = call(port, "POST", "/api/v1/echo/streaming_chat", b"user_message=hi", headers)
        assert_status(bad, 400, 3)


def test_oversized_body_is_413(port: int) -> None:
    text = "x" * (16 * 1024 * 1024 + 10)
    reply = call(port, "POST", "/api/v1/echo/streaming_chat", {"user_message": {"text": text}})
    assert_status(reply, 413, 3)


@pytest.mark.parametrize(
    "headers", [{"Grpc-Timeout": "soon"}, {"Grpc-Timeout": "1.5S"}, {"Grpc-Metadata-Blob-Bin": "%%%"}]
)
def test_bad_headers_are_400(port: int, headers: dict[str, str]) -> None:
    assert_status(call(port, "GET", "/api/v1/echo/function", headers=headers), 400, 3)


@pytest.mark.parametrize("agent", ["caf%C3%A9", "a%0Ab", "nul%00"])
def test_agent_names_metadata_cannot_carry_are_400(port: int, agent: str) -> None:
    assert_status(call(port, "GET", f"/api/v1/{agent}/function"), 400, 3)
    assert_status(chat(port, agent, "hi"), 400, 3)


def test_deadline_before_the_first_line_is_504(port: int) -> None:
    reply = chat(port, "probe", "slow:deadline1", **{"Grpc-Timeout": "700m"})
    assert_status(reply, 504, 4)


def test_deadline_after_the_first_line_is_an_error_line(port: int) -> None:
    reply = chat(port, "probe", "slow:deadline2", maximal=True, **{"Grpc-Timeout": "1S"})
    assert reply.status == 200
    lines = reply.lines()
    assert any(line.get("response", {}).get("type") == "AGENT_PROGRESS" for line in lines[:-1])
    assert set(lines[-1]) == {"error"} and lines[-1]["error"]["code"] == 4
    assert set(lines[-1]["error"]) == {"code", "message", "details"}


def test_sse_error_event(port: int) -> None:
    reply = chat(port, "probe", "slow:deadline3", maximal=True,
                 **{"Grpc-Timeout": "1S", "Accept": "text/event-stream"})
    frames = reply.body.decode().split("\n\n")
    assert frames[-2].startswith("event: error\ndata: ")
    assert json.loads(frames[-2].split("data: ", 1)[1])["code"] == 4


# ---- headers, cancellation, docs, health ------------------------------------------------


def test_headers_become_metadata(port: int) -> None:
    reply = chat(
        port, "probe", "look",
        request_id="r-1", Authorization="Bearer t0k", **{"Grpc-Metadata-X-Trace": "abc", "X-Other": "no"},
    )
    assert reply.status == 200, reply.body
    sly = reply.lines()[-1]["response"]["sly_data"]
    assert sly["seen_metadata"] == {"request_id": "r-1", "authorization": "Bearer t0k", "x-trace": "abc"}
    assert sly["numbers"] == {"ten": 10, "half": 0.5, "list": [1, 2.5, 3]}
    # Nothing of the transport leaks back as Grpc-Metadata-* headers.
    assert not [h for h in reply.headers if h.lower().startswith("grpc-metadata-content-type")]


def test_client_disconnect_cancels_server_work(port: int, markers: Path) -> None:
    connection, lines = open_stream(
        port, "probe", {"user_message": {"text": "slow:gone"}, "chat_filter": {"chat_filter_type": "MAXIMAL"}}
    )
    for line in lines:
        if json.loads(line)["response"]["type"] == "AGENT_PROGRESS":
            break
    assert wait_for(lambda: (markers / "started-gone").exists())
    connection.sock.close() if connection.sock else None
    connection.close()
    assert wait_for(lambda: (markers / "cancelled-gone").exists(), timeout=5.0)


def test_docs(port: int) -> None:
    reply = call(port, "GET", "/api/v1/docs")
    assert reply.status == 200
    document = reply.json()
    seed = yaml.safe_load((FIXTURES / "agent-service.openapi.yaml").read_text())
    assert set(seed["paths"]) <= set(document["paths"])
    assert set(seed["components"]["schemas"]) <= set(document["components"]["schemas"])
    assert document["components"]["schemas"]["Status"]["properties"]["code"]["type"] == "integer"
    as_yaml = call(port, "GET", "/api/v1/docs?format=yaml")
    assert yaml.safe_load(as_yaml.body) == document
    assert call(port, "POST", "/api/v1/docs").status == 405


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_health(port: int, path: str) -> None:
    reply = call(port, "GET", path)
    assert reply.status == 200
    body = reply.json()
    # neuro-san 0.7.15's body, plus the gRPC health status it was derived from.
    assert body["service"] == "neuro-san.Agent" and body["status"] == "ok"
    assert body["versions"]["neuro-san"] == "0.7.15" and body["versions"]["neuro-san-grpc"]
    assert body["serving_status"] == "SERVING"


def test_health_of_an_unknown_service_is_404(port: int) -> None:
    assert call(port, "GET", "/healthz?service=no.such.Service").status == 404


def test_options_lists_the_methods(port: int) -> None:
    reply = call(port, "OPTIONS", "/api/v1/echo/streaming_chat")
    assert reply.status == 204
    assert reply.headers["Allow"] == "POST, OPTIONS"
    assert "Access-Control-Allow-Origin" not in reply.headers  # no CORS origins configured
