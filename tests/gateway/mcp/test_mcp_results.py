"""A tools/call result is built as plain data (gateway/mcp/calls.py ``call_result``) and
checked once per era on its way out; what goes on the wire is byte for byte what building
the SDK's ``CallToolResult`` and dumping it sent before, in both eras, for any text and any
JSON ``structuredContent`` (non-finite numbers, nulls, nesting). The modern checks take the
request's own case-insensitive headers; ``dumps`` (one encoder for every room) writes what
``json.dumps`` with its arguments writes; a JSON answer's headers are those aiohttp's
``content_type`` argument gave."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mcp_types
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from gateway.host.responses import dumps
from gateway.mcp.calls import call_result, checked
from gateway.mcp.dispatch import Dispatcher
from gateway.mcp.frontend import _json
from gateway.mcp.modern import HEADER_MISMATCH, admit, finish
from gateway.mcp.protocol import JsonRpcError, wire
from gateway.mcp.tools import caller_key

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
STRUCTURED = st.none() | st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4)


def _as_the_sdk_built_it(text: str, structured: dict[str, Any] | None, is_error: bool) -> dict[str, Any]:
    """The result as calls.py built it before: the SDK's model, dumped."""
    return wire(mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)],
                                         structured_content=structured, is_error=is_error))


def _tool_call(headers: dict[str, str] | CIMultiDict[str]) -> Any:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"user_message": {"text": "hi"}}, "_meta": META}}
    return admit(body, CIMultiDictProxy(CIMultiDict(headers)))


_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


@settings(max_examples=300, deadline=None)
@given(st.text(), STRUCTURED, st.booleans())
def test_a_result_goes_out_as_the_sdks_model_sent_it_in_both_eras(
    text: str, structured: dict[str, Any] | None, is_error: bool
) -> None:
    before = _as_the_sdk_built_it(text, structured, is_error)
    now = call_result(text, structured=structured, is_error=is_error)
    assert dumps(checked(now)) == dumps(before)  # the handshake era
    request = _tool_call(_HEADERS)
    server_info = Dispatcher(None, None, "1.0").server_info()  # type: ignore[arg-type]
    assert dumps(finish(request, now, _HEADERS, server_info)) == dumps(finish(request, before, _HEADERS, server_info))


def test_the_server_info_is_the_implementation_the_sdk_dumps() -> None:
    info = Dispatcher(None, None, "9.9").server_info()  # type: ignore[arg-type]
    assert info == wire(mcp_types.Implementation(name="Neuro-san-MCPServer", title="Neuro-san MCP Server",
                                                 version="9.9"))


@pytest.mark.parametrize("case", ["as sent", "lower", "upper"])
def test_routing_headers_are_read_whatever_their_case(case: str) -> None:
    change = {"as sent": str, "lower": str.lower, "upper": str.upper}[case]
    admitted = _tool_call({change(name): value for name, value in _HEADERS.items()})
    assert admitted is not None and admitted.method == "tools/call" and admitted.version == MODERN


def test_a_routing_header_sent_twice_in_two_cases_is_a_header_mismatch() -> None:
    headers = CIMultiDict(_HEADERS)
    headers.add("mcp-name", "echo")
    with pytest.raises(JsonRpcError) as refused:
        _tool_call(headers)
    assert refused.value.code == HEADER_MISMATCH and refused.value.http_status == 400


def test_a_header_that_disagrees_with_the_body_is_still_a_mismatch() -> None:
    with pytest.raises(JsonRpcError) as refused:
        _tool_call({**_HEADERS, "mcp-name": "other"})
    assert refused.value.code == HEADER_MISMATCH


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES | st.text(alphabet=st.characters(codec=None, categories=["Cs", "L"])))
def test_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")
    assert dumps(value) == expected


@pytest.mark.parametrize("headers", [None, {}, {"Allow": "POST"}, {"Retry-After": "3", "WWW-Authenticate": "Bearer"}])
def test_a_json_answer_has_the_headers_in_the_order_aiohttps_content_type_gave(headers: dict[str, str] | None) -> None:
    before = web.Response(status=200, body=b"{}", content_type="application/json", headers=headers)
    now = _json(200, {}, headers)
    assert list(now.headers.items()) == list(before.headers.items())
    assert now.content_type == before.content_type and now.charset == before.charset


def test_the_caller_key_is_the_digest_of_the_credentials_alone() -> None:
    digest = hashlib.sha256()
    digest.update(b"authorization\0Bearer t\0")
    digest.update(b"x-api-key\0k\0")
    assert caller_key([("authorization", "Bearer t"), ("user-agent", "x"), ("x-api-key", b"k")]) == digest.hexdigest()
    assert caller_key([("user-agent", "x")]) == caller_key([]) == hashlib.sha256().hexdigest()
