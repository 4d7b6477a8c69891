"""Gateway units: path templates, routes from the real descriptors, the route table."""

from __future__ import annotations

import pytest
from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2, descriptor_pool

from gateway.host.mux import Entry, MethodNotAllowed, NoRoute, Router
from gateway.host.pattern import CompiledPattern, InvalidTemplateError, parse_template, split_path
from gateway.transcoder.frontend import default_services
from gateway.transcoder.routes import Route, RouteConfigError, check_conflicts, routes_from_services


def compiled(template: str, greedy: frozenset[str] = frozenset()) -> CompiledPattern:
    return CompiledPattern(parse_template(template), greedy)


def match(template: str, path: str, greedy: frozenset[str] = frozenset()) -> dict[str, str] | None:
    return compiled(template, greedy).match(split_path(path))


@pytest.mark.parametrize(
    ("template", "path", "expected"),
    [
        ("/v1/things", "/v1/things", {}),
        ("/v1/things", "/v1/things/", {}),
        ("/v1/things", "/v1/other", None),
        ("/v1/{name}", "/v1/abc", {"name": "abc"}),
        ("/v1/{name}", "/v1/a%20b", {"name": "a b"}),
        ("/v1/{name}", "/v1/a/b", None),
        ("/v1/*/x", "/v1/anything/x", {}),
        ("/v1/**", "/v1", {}),
        ("/v1/**", "/v1/a/b/c", {}),
        ("/v1/{name=messages/*}", "/v1/messages/12", {"name": "messages/12"}),
        ("/v1/{name=messages/*}", "/v1/other/12", None),
        ("/v1/{path=**}", "/v1/a/b%2Fc/d", {"path": "a/b%2Fc/d"}),
        ("/v1/{name}:cancel", "/v1/abc:cancel", {"name": "abc"}),
        ("/v1/{name}:cancel", "/v1/abc", None),
        ("/v1/{a}/{b.c}", "/v1/x/y", {"a": "x", "b.c": "y"}),
    ],
)
def test_templates_match_as_the_spec_says(
    template: str, path: str, expected: dict[str, str] | None
) -> None:
    assert match(template, path) == expected


def test_greedy_variable_takes_several_segments_and_keeps_the_suffix() -> None:
    greedy = frozenset({"agent_name"})
    template = "/api/v1/{agent_name}/function"
    assert match(template, "/api/v1/deep/math_guy/function", greedy) == {"agent_name": "deep/math_guy"}
    assert match(template, "/api/v1/a/b/c/function", greedy) == {"agent_name": "a/b/c"}
    assert match(template, "/api/v1/deep%2Fmath_guy/function", greedy) == {"agent_name": "deep/math_guy"}
    assert match(template, "/api/v1/function", greedy) is None
    assert match(template, "/api/v1/x/connectivity", greedy) is None
    # Not greedy: one segment only, as the spec says.
    assert match(template, "/api/v1/deep/math_guy/function") is None


@pytest.mark.parametrize(
    "template",
    ["v1/x", "/v1/{", "/v1/{a}}", "/v1/{a{b}}", "/v1//x", "/v1/{a}/{a}", "/v1/{1bad}", "/v1/**/x", "/v1/x:"],
)
def test_bad_templates_are_refused(template: str) -> None:
    with pytest.raises(InvalidTemplateError):
        compiled(template)


def test_routes_come_from_the_descriptors() -> None:
    routes = routes_from_services(default_services())
    table = {(r.http_method, r.template): r for r in routes}
    assert set(table) == {
        ("GET", "/api/v1/{agent_name}/function"),
        ("GET", "/api/v1/{agent_name}/connectivity"),
        ("POST", "/api/v1/{agent_name}/streaming_chat"),
        ("GET", "/api/v1/list"),
    }
    chat = table[("POST", "/api/v1/{agent_name}/streaming_chat")]
    assert chat.body == "*" and chat.server_streaming
    assert chat.grpc_path == "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat"
    assert [(b.variable, b.metadata_key) for b in chat.path_bindings] == [("agent_name", "agent-name")]
    assert table[("GET", "/api/v1/list")].grpc_path.endswith("concierge.ConciergeService/List")


def _router() -> Router[Route]:
    return Router(Entry(r.http_method, r.pattern, r) for r in routes_from_services(default_services()))


@pytest.mark.parametrize(
    ("method", "path", "rpc", "agent"),
    [
        ("GET", "/api/v1/hello_world/function", "Function", "hello_world"),
        ("GET", "/api/v1/deep/math_guy/connectivity", "Connectivity", "deep/math_guy"),
        ("POST", "/api/v1/a/b/c/streaming_chat", "StreamingChat", "a/b/c"),
        ("GET", "/api/v1/list", "List", None),
        ("GET", "/api/v1/list/function", "Function", "list"),  # an agent called "list"
        ("HEAD", "/api/v1/list", "List", None),
    ],
)
def test_router_finds_the_method(method: str, path: str, rpc: str, agent: str | None) -> None:
    found = _router().match(method, path)
    assert found.target.method.name == rpc
    assert found.captures.get("agent_name") == agent


def test_router_tells_404_from_405() -> None:
    router = _router()
    with pytest.raises(MethodNotAllowed) as not_allowed:
        router.match("GET", "/api/v1/x/streaming_chat")
    assert not_allowed.value.allowed == ["POST"]
    with pytest.raises(MethodNotAllowed):
        router.match("DELETE", "/api/v1/list")
    for path in ("/api/v1/function", "/nope", "/api/v2/list", "/"):
        with pytest.raises(NoRoute):
            router.match("GET", path)
    assert router.allowed_methods("/api/v1/x/function") == ["GET"]


def test_literals_win_over_variables() -> None:
    router = Router(
        [
            Entry("GET", compiled("/v1/{name}"), "variable"),
            Entry("GET", compiled("/v1/special"), "literal"),
            Entry("GET", compiled("/v1/**"), "rest"),
        ]
    )
    assert router.match("GET", "/v1/special").target == "literal"
    assert router.match("GET", "/v1/other").target == "variable"
    assert router.match("GET", "/v1/a/b").target == "rest"


def _service_with_rules(*rules: http_pb2.HttpRule) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="test_gw.proto", package="gwtest", syntax="proto3")
    proto.message_type.add(name="Req").field.add(
        name="item_id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, json_name="itemId"
    )
    proto.message_type.add(name="Resp")
    service = proto.service.add(name="Things")
    for index, rule in enumerate(rules):
        method = service.method.add(name=f"M{index}", input_type=".gwtest.Req", output_type=".gwtest.Resp")
        method.options.Extensions[annotations_pb2.http].CopyFrom(rule)
    return proto


def _routes_for(*rules: http_pb2.HttpRule) -> list[Route]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_service_with_rules(*rules))
    return routes_from_services([pool.FindServiceByName("gwtest.Things")])


def test_conflicting_bindings_are_a_startup_error() -> None:
    with pytest.raises(RouteConfigError, match="conflicting"):
        _routes_for(http_pb2.HttpRule(get="/v1/{item_id}"), http_pb2.HttpRule(get="/v1/*"))


def test_additional_bindings_and_field_variables() -> None:
    rule = http_pb2.HttpRule(get="/v1/items/{item_id}")
    rule.additional_bindings.add(post="/v1/items/{itemId}:touch", body="*")
    routes = _routes_for(rule)
    assert [(r.http_method, r.template) for r in routes] == [
        ("GET", "/v1/items/{item_id}"),
        ("POST", "/v1/items/{itemId}:touch"),
    ]
    assert routes[0].path_bindings[0].field_path[0].name == "item_id"
    assert routes[0].bound_fields == frozenset({"item_id"})
    check_conflicts(routes)


def test_bad_body_field_is_a_startup_error() -> None:
    with pytest.raises(RouteConfigError, match="body field"):
        _routes_for(http_pb2.HttpRule(post="/v1/x", body="nope"))


def _rich_routes() -> list[Route]:
    """A service whose request has scalars, a repeated field, an enum and a sub-message."""
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="test_gw_rich.proto", package="gwrich", syntax="proto3")
    proto.enum_type.add(name="Color").value.extend(
        [descriptor_pb2.EnumValueDescriptorProto(name=n, number=i) for i, n in enumerate(["NONE", "RED", "BLUE"])]
    )
    inner = proto.message_type.add(name="Inner")
    inner.field.add(name="sub_field", number=1, type=field.TYPE_INT32, json_name="subField")
    request = proto.message_type.add(name="Req")
    request.field.add(name="item_id", number=1, type=field.TYPE_STRING, json_name="itemId")
    request.field.add(name="tags", number=2, type=field.TYPE_STRING, label=field.LABEL_REPEATED, json_name="tags")
    request.field.add(name="color", number=3, type=field.TYPE_ENUM, type_name=".gwrich.Color", json_name="color")
    request.field.add(name="inner", number=4, type=field.TYPE_MESSAGE, type_name=".gwrich.Inner", json_name="inner")
    request.field.add(name="flag", number=5, type=field.TYPE_BOOL, json_name="flag")
    proto.message_type.add(name="Resp")
    service = proto.service.add(name="Rich")
    rules = [
        http_pb2.HttpRule(get="/v1/items/{item_id}"),
        http_pb2.HttpRule(post="/v1/items/{item_id}:inner", body="inner"),
        http_pb2.HttpRule(put="/v1/items/{item_id}", body="*"),
    ]
    for index, rule in enumerate(rules):
        method = service.method.add(name=f"M{index}", input_type=".gwrich.Req", output_type=".gwrich.Resp")
        method.options.Extensions[annotations_pb2.http].CopyFrom(rule)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return routes_from_services([pool.FindServiceByName("gwrich.Rich")])


def test_binder_order_body_then_path_then_query() -> None:
    from gateway.host.errors import GatewayError
    from gateway.transcoder.binder import RequestBinder

    get, inner_body, put_all = (RequestBinder(route) for route in _rich_routes())
    query = [("tags", "a"), ("tags", "b"), ("color", "blue"), ("inner.subField", "7"), ("flag", "true"),
             ("item_id", "ignored: bound by the path"), ("unknown", "x")]
    message, metadata = get.bind(b"", {"item_id": "i-1"}, query)
    assert (message.item_id, list(message.tags), message.color, message.inner.sub_field, message.flag) == (
        "i-1", ["a", "b"], 2, 7, True
    )
    assert metadata == []
    assert get.bind(b"", {"item_id": "x"}, [("color", "nope")])[0].color == 0
    for bad_query in ([("flag", "maybe")], [("inner.sub_field", "x")], [("color", "RED"), ("color", "BLUE")]):
        with pytest.raises(GatewayError):
            get.bind(b"", {"item_id": "x"}, bad_query)
    # body: "inner" fills only that field; the query still fills the others.
    message, _ = inner_body.bind(b'{"subField": 3}', {"item_id": "i-2"}, [("tags", "t")])
    assert (message.inner.sub_field, message.item_id, list(message.tags)) == (3, "i-2", ["t"])
    # body: "*" — the path wins over the body, and the query is ignored.
    message, _ = put_all.bind(b'{"item_id": "from-body", "tags": ["b"]}', {"item_id": "from-path"}, [("tags", "q")])
    assert (message.item_id, list(message.tags)) == ("from-path", ["b"])
