"""The manifest's ``mcp`` key and MCP tool names, as neuro-san 0.7 reads them (stricter
where neuro-san only warned). The directory's ``mcp_tool`` field: tests/service/test_directory_service.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuro_san.network.manifest import parse_manifest
from neuro_san.network.served_as_mcp import McpSetting, derived_tool_name, parse_mcp_setting, tool_names


@pytest.mark.parametrize(
    ("network", "tool"),
    [("deep/math_guy", "deep__math_guy"), ("Agent.1", "Agent_1"), ("a b/c", "a_b__c"), ("é/x", "___x"),
     ("a__b", "a__b"), ("x-y", "x-y")],
)
def test_derived_names_follow_neuro_san(network: str, tool: str) -> None:
    assert derived_tool_name(network) == tool
    assert derived_tool_name(tool) == tool  # idempotent


def test_which_entries_are_tools() -> None:
    document = {
        "a.hocon": True,
        "b.hocon": {"serve": True},
        "c.hocon": {"serve": True, "mcp": False},
        "d.hocon": {"mcp": {"name": "calculator"}},
        "e.hocon": {"mcp": {"enable": False, "name": "zzz"}},
        "f.hocon": {"public": False, "mcp": True},
        "g.hocon": False,
    }
    entries = parse_manifest(document, Path("/m/manifest.hocon")).entries
    assert {name: entry.mcp for name, entry in entries.items()} == {
        "a": McpSetting(True), "b": McpSetting(False), "c": McpSetting(False), "d": McpSetting(True, "calculator"),
        "e": McpSetting(False, "zzz"), "f": McpSetting(True), "g": McpSetting(False),
    }
    assert entries["f"].public is False  # stays private (neuro-san would make it public)


@pytest.mark.parametrize(
    ("value", "message"),
    [("yes", "mcp must be true, false or a dict"), ({"enable": "yes"}, "mcp.enable must be true or false"),
     ({"name": "bad name!"}, "mcp.name must be"), ({"name": ""}, "mcp.name must be"),
     ({"name": "x" * 129}, "mcp.name must be"), ({"nmae": "x"}, "unknown keys ['nmae']")],
)
def test_a_bad_mcp_value_is_an_error_of_its_entry(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_mcp_setting(value)
    manifest = parse_manifest({"x.hocon": {"mcp": value}, "ok.hocon": True}, Path("/m/manifest.hocon"))
    assert list(manifest.entries) == ["ok"]
    assert [error.key_path for error in manifest.errors] == ["x.hocon.mcp"]


def test_collisions_keep_the_network_that_is_the_name_else_the_first() -> None:
    on = McpSetting(True)
    assert tool_names([("a/b", on), ("a__b", on)]) == {"a__b": "a__b"}
    assert tool_names([("x", McpSetting(True, "calc")), ("y", McpSetting(True, "calc"))]) == {"x": "calc"}
    # A served network reserves its own name, MCP tool or not.
    assert tool_names([("hello", McpSetting(False)), ("other", McpSetting(True, "hello"))]) == {}
    assert tool_names([("deep/m", on), ("n", McpSetting(True, "deep__m"))]) == {"deep/m": "deep__m"}
