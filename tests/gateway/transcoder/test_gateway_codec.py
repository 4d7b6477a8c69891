"""Gateway units: JSON ⇄ proto, request binding, headers ⇄ metadata, the OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import struct_pb2
from neuro_san.api.grpc import agent_pb2, chat_pb2, concierge_pb2

from gateway.host.errors import GatewayError
from gateway.host.metadata import HeaderMapper, metadata_to_headers, parse_timeout
from gateway.transcoder.binder import RequestBinder
from gateway.transcoder.frontend import default_services
from gateway.transcoder.marshal import MessageCodec, whole_numbers_to_int
from gateway.transcoder.openapi import build_document
from gateway.transcoder.routes import Route, routes_from_services

SEED = Path(__file__).resolve().parents[2] / "fixtures" / "gateway" / "agent-service.openapi.yaml"
ROUTES = {r.method.name: r for r in routes_from_services(default_services())}


def bind(route: Route, body: bytes = b"", agent: str = "a", query: list[tuple[str, str]] | None = None) -> Any:
    return RequestBinder(route).bind(body, {"agent_name": agent} if route.path_bindings else {}, query or [])


def bad(route: Route, body: bytes) -> dict[str, Any]:
    with pytest.raises(GatewayError) as caught:
        bind(route, body)
    assert caught.value.http_status == 400
    return caught.value.status_dict()


def test_struct_whole_numbers_come_out_as_ints() -> None:
    response = agent_pb2.ChatResponse()
    response.response.type = chat_pb2.ChatMessage.AGENT_FRAMEWORK
    response.response.sly_data.update({"ten": 10, "half": 0.5, "nested": {"list": [1, 2.5, {"n": 3}]}})
    response.response.chat_context.chat_histories.add().messages.add(text="deep").structure.update({"k": 7})
    text = MessageCodec(agent_pb2.ChatResponse).to_json(response).decode()
    assert '"ten":10' in text and '"half":0.5' in text and '"list":[1,2.5,{"n":3}]' in text
    assert '"structure":{"k":7}' in text
    assert " " not in text.replace("AGENT_FRAMEWORK", "")  # compact
    data = json.loads(text)
    assert data["response"]["type"] == "AGENT_FRAMEWORK"  # enum names
    assert "chat_context" in data["response"] and "origin" not in data["response"]  # empty fields omitted…
    assert data["response"]["text"] == ""  # …except a ChatMessage's text, as neuro-san 0.7.15 sends it


def test_whole_numbers_leave_huge_and_fractional_values_alone() -> None:
    assert whole_numbers_to_int({"a": [1.0, 1.5, 1e300]}) == {"a": [1, 1.5, 1e300]}
    assert type(whole_numbers_to_int(2.0**60)) is float


def test_function_response_keys_are_snake_case() -> None:
    response = agent_pb2.FunctionResponse()
    response.function.sly_data_schema.update({"type": "object"})
    assert MessageCodec(agent_pb2.FunctionResponse).to_json(response) == (
        b'{"function":{"sly_data_schema":{"type":"object"}}}'
    )


def test_request_accepts_snake_and_camel_case_and_enum_spellings() -> None:
    body = b'{"userMessage": {"text": "hi", "type": "human"}, "chat_filter": {"chatFilterType": "maximal"}}'
    message, metadata = bind(ROUTES["StreamingChat"], body, agent="deep/math_guy")
    assert message.user_message.text == "hi"
    assert message.user_message.type == chat_pb2.ChatMessage.HUMAN
    assert message.chat_filter.chat_filter_type == agent_pb2.MAXIMAL
    assert metadata == [("agent-name", "deep/math_guy")]
    numbered, _ = bind(ROUTES["StreamingChat"], b'{"chat_filter": {"chat_filter_type": 2}}')
    assert numbered.chat_filter.chat_filter_type == agent_pb2.MAXIMAL


@pytest.mark.parametrize("value", ['"BOGUS"', "7", '"99"'])
def test_unknown_enum_values_read_as_zero(value: str) -> None:
    body = b'{"chat_filter": {"chat_filter_type": %s}, "user_message": {"text": "x"}}' % value.encode()
    message, _ = bind(ROUTES["StreamingChat"], body)
    assert message.chat_filter.chat_filter_type == agent_pb2.UNKNOWN  # read as MINIMAL by the server
    assert message.user_message.text == "x"


def test_unknown_fields_are_ignored_and_empty_body_is_empty_message() -> None:
    message, _ = bind(ROUTES["StreamingChat"], b'{"nope": 1, "user_message": {"text": "x", "extra": []}}')
    assert message.user_message.text == "x"
    for body in (b"", b"  ", b"{}"):
        empty, _ = bind(ROUTES["StreamingChat"], body)
        assert empty == agent_pb2.ChatRequest()


def test_struct_input_keeps_its_content() -> None:
    message, _ = bind(ROUTES["StreamingChat"], b'{"sly_data": {"x": 1, "camelKey": {"y": [true, null]}}}')
    assert message.sly_data["x"] == 1
    assert message.sly_data["camelKey"]["y"][0] is True
    assert message.sly_data["camelKey"]["y"][1] is None
    assert isinstance(message.sly_data, struct_pb2.Struct)


@pytest.mark.parametrize(
    ("body", "field", "message_part"),
    [
        (b'{"user_message": {"text": 5}}', "user_message.text", "expected a string"),
        (b'{"user_message": "hi"}', "user_message", "expected an object"),
        (b'{"user_message": {"origin": {}}}', "user_message.origin", "expected an array"),
        (b'{"sly_data": 3}', "sly_data", "expected an object"),
        (b'{"chat_filter": {"chat_filter_type": true}}', "chat_filter.chat_filter_type", "enum"),
        (
            b'{"user_message": {"origin": [{"instantiation_index": 1.5}]}}',
            "user_message.origin[0].instantiation_index",
            "1.5",
        ),
        (b"[1, 2]", "body", "must be a JSON object"),
        (b'"text"', "body", "must be a JSON object"),
        (b'{"user_message": ', "body", "not valid JSON"),
        (b"\xff\xfe", "body", ""),
    ],
)
def test_bad_input_is_400_with_the_field_named(body: bytes, field: str, message_part: str) -> None:
    status = bad(ROUTES["StreamingChat"], body)
    assert status["code"] == 3
    assert message_part in status["message"]
    assert "Available Fields" not in status["message"]
    [detail] = status["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert detail["field_violations"][0]["field"] == field


def test_get_routes_ignore_unknown_query_parameters() -> None:
    message, metadata = bind(ROUTES["Function"], query=[("unknown", "1")], agent="x")
    assert message == agent_pb2.FunctionRequest()
    assert metadata == [("agent-name", "x")]
    listed, none = bind(ROUTES["List"], query=[("a", "b")])
    assert listed == concierge_pb2.ConciergeRequest() and none == []


def test_header_mapping() -> None:
    mapper = HeaderMapper(("request_id", "user_id"))
    metadata = mapper.to_metadata(
        {
            "Authorization": "Bearer t",
            "request_id": "r1",
            "Grpc-Metadata-X-Trace": "abc",
            "Grpc-Metadata-Blob-Bin": "AAEC",  # unpadded is fine too
            "Grpc-Metadata-Bad Key": "dropped",
            "Grpc-Metadata-Grpc-Timeout": "dropped",
            "Grpc-Metadata-Content-Type": "dropped",
            "Grpc-Metadata-Nonascii": "caf\u00e9",
            "X-Other": "not forwarded",
        }
    )
    assert metadata == [
        ("authorization", "Bearer t"),
        ("request_id", "r1"),
        ("x-trace", "abc"),
        ("blob-bin", b"\x00\x01\x02"),
    ]
    with pytest.raises(GatewayError) as caught:
        mapper.to_metadata({"Grpc-Metadata-Blob-Bin": "!!!"})
    assert caught.value.http_status == 400


def test_response_metadata_becomes_headers_without_transport_keys() -> None:
    headers = metadata_to_headers(
        [("x-served-by", "a"), ("content-type", "application/grpc"), ("grpc-status", "0"), ("k-bin", b"\x01")],
        "Grpc-Metadata-",
    )
    assert headers == [("Grpc-Metadata-x-served-by", "a"), ("Grpc-Metadata-k-bin", "AQ==")]


@pytest.mark.parametrize(
    ("header", "maximum", "seconds"),
    [(None, None, None), (None, 9.0, 9.0), ("2S", None, 2.0), ("1500m", None, 1.5), ("1H", 60.0, 60.0),
     ("3M", None, 180.0), ("250000u", None, 0.25), ("100n", None, 1e-7)],
)
def test_grpc_timeout(header: str | None, maximum: float | None, seconds: float | None) -> None:
    parsed = parse_timeout(header, maximum)
    if seconds is None:
        assert parsed is None
    else:
        assert parsed == pytest.approx(seconds)


@pytest.mark.parametrize("header", ["", "1", "S", "1s", "123456789S", "-1S", "1.5S"])
def test_bad_grpc_timeout_is_400(header: str) -> None:
    with pytest.raises(GatewayError) as caught:
        parse_timeout(header, None)
    assert caught.value.http_status == 400


def test_openapi_matches_the_seed() -> None:
    document = build_document(routes_from_services(default_services()))
    seed = yaml.safe_load(SEED.read_text())
    for path, operations in seed["paths"].items():
        assert path in document["paths"], path
        for verb, operation in operations.items():
            ours = document["paths"][path][verb]
            assert ours["operationId"] == operation["operationId"]
            assert [p["name"] for p in ours["parameters"]] == [p["name"] for p in operation["parameters"]]
            assert ("requestBody" in ours) == ("requestBody" in operation)
    assert "/api/v1/list" in document["paths"]
    for name, schema in seed["components"]["schemas"].items():
        assert name in document["components"]["schemas"], name
        ours = document["components"]["schemas"][name]
        assert set(ours["properties"]) == set(schema["properties"]), name
        for prop, spec in schema["properties"].items():
            for key in ("type", "format", "enum", "$ref"):
                assert ours["properties"][prop].get(key) == spec.get(key), (name, prop, key)
            if "items" in spec:
                assert ours["properties"][prop]["items"] == {
                    k: v for k, v in spec["items"].items() if k != "description"
                }, (name, prop)
    stream_ok = document["paths"]["/api/v1/{agent_name}/streaming_chat"]["post"]["responses"]["200"]
    assert stream_ok["content"]["application/json-lines"]["schema"] == {"$ref": "#/components/schemas/ChatResponse"}
