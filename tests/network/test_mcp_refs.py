"""MCP server references in network files: which strings are MCP, the dict form, and
the load errors (with file, key path and reason) for entries neuro-san would ignore."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.loader import load_network
from neuro_san.network.mcp_refs import McpServerRef, is_mcp_url
from neuro_san.network.validate import main_validate
from neuro_san.runtime.mcp_servers_info import McpServersInfo
from neuro_san.runtime.tool_binding import _written_order

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp"


@pytest.mark.parametrize(
    ("tool", "mcp"),
    [
        ("https://mcp.deepwiki.com/mcp", True),
        ("http://localhost:8080/mcp", True),
        ("https://deepwiki.com/mcp/free", True),
        ("https://example.com/server/mcp/", True),
        ("https://mcp.example.com", True),
        ("HTTPS://EXAMPLE.COM/MCP", True),
        ("https://example.com/mcpserver", False),
        ("https://example.com/mcp#frag", False),
        ("ftp://mcp.example.com/mcp", False),
        ("/math_guy", False),
        ("http://localhost:8080/math_guy", False),
    ],
)
def test_which_strings_name_an_mcp_server(tool: str, mcp: bool) -> None:
    assert is_mcp_url(tool) is mcp


def test_both_shapes_load_in_written_order() -> None:
    spec = load_network(FIXTURES / "mcp_good.hocon", "mcp_good")
    front = spec.front
    assert front.mcp_servers == (
        McpServerRef("https://mcp.tools.example/v1", None, 0, listed=True),
        McpServerRef("https://tools.example/mcp", ("search", "fetch/page"), 2, listed=False),
    )
    # The string forms stay in tools (Connectivity lists them); the dict does not.
    assert front.tools == ("https://mcp.tools.example/v1", "helper", "https://agents.example/math_guy")
    assert _written_order(front) == [
        front.mcp_servers[0],
        "helper",
        front.mcp_servers[1],
        "https://agents.example/math_guy",
    ]


def _front_with_tools(tools: list[Any]) -> dict[str, Any]:
    return {"llm_config": {}, "tools": [{"name": "front", "instructions": "x", "tools": tools}]}


@pytest.mark.parametrize(
    ("entry", "key_path", "reason"),
    [
        ({"tools": ["a"]}, "tools[0].tools[0]", "an MCP server entry needs 'url' (the server's http(s) URL)"),
        ({"url": 7}, "tools[0].tools[0].url", "must be the MCP server's http(s) URL, not 7"),
        ({"url": "http:///mcp"}, "tools[0].tools[0].url", "'http:///mcp' has no host"),
        (
            {"url": "https://x.example/mcp", "tools": "a"},
            "tools[0].tools[0].tools",
            "must be a list of MCP tool names, not str",
        ),
        (
            {"url": "https://x.example/mcp", "tools": ["a", 3]},
            "tools[0].tools[0].tools[1]",
            "must be an MCP tool name, not 3",
        ),
        (
            {"url": "https://x.example/mcp", "headers": {"a": "b"}},
            "tools[0].tools[0]",
            "an MCP server entry takes only 'url' and 'tools', not headers",
        ),
    ],
)
def test_bad_mcp_entries_are_refused_with_key_path(
    tmp_path: Path, entry: dict[str, Any], key_path: str, reason: str
) -> None:
    path = tmp_path / "net.json"
    path.write_text(json.dumps(_front_with_tools([entry])))
    with pytest.raises(NetworkLoadError) as caught:
        load_network(path, "net")
    assert (caught.value.key_path, caught.value.reason) == (key_path, reason)


def test_validate_reports_a_bad_mcp_entry_with_file_key_path_and_reason() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main_validate([str(FIXTURES / "mcp_good.hocon"), str(FIXTURES / "mcp_bad.hocon")], out=out, err=err)
    assert code == 1
    assert out.getvalue() == "OK mcp_good\n"
    assert err.getvalue() == (
        f"{FIXTURES / 'mcp_bad.hocon'}: tools[0].tools[0]: an MCP server entry needs 'url' "
        "(the server's http(s) URL) (in agent 'front')\n"
    )


def test_the_servers_info_file_is_checked_when_read(tmp_path: Path) -> None:
    path = tmp_path / "info.json"
    path.write_text(json.dumps({"https://x.example/mcp": {"http_headers": {"Authorization": 5}}}))
    with pytest.raises(NetworkLoadError) as caught:
        McpServersInfo.load(path)
    assert caught.value.key_path == '"https://x.example/mcp".http_headers'
    assert McpServersInfo.load(tmp_path / "missing.json").servers == {}


def test_sly_data_headers_replace_the_file_headers_whole(tmp_path: Path) -> None:
    path = tmp_path / "info.json"
    url = "https://x.example/mcp"
    path.write_text(json.dumps({url: {"http_headers": {"Authorization": "Bearer file", "X-A": "1"}, "tools": ["t"]}}))
    info = McpServersInfo.load(path)
    assert info.headers(url, {}) == {"Authorization": "Bearer file", "X-A": "1"}
    sly = {"http_headers": {url: {"Authorization": "Bearer sly"}}}
    assert info.headers(url, sly) == {"Authorization": "Bearer sly"}
    assert info.headers(url, {"http_headers": {"https://other/mcp": {"A": "b"}}})["X-A"] == "1"
    assert info.headers(url, {"http_headers": "not a dict"})["X-A"] == "1"
    assert info.tools(url) == ("t",)
