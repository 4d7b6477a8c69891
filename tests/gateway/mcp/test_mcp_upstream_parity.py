"""Opt-in: our MCP reference test, tool-name filter and allow-list matching give what
neuro-san 0.7.15's own functions give, on the same inputs (run in its virtualenv)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import types

from neuro_san.network.mcp_refs import is_mcp_url
from neuro_san.runtime.mcp_server_tools import safe_tool_name, select_tools

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")

REFS = [
    "https://mcp.deepwiki.com/mcp", "http://localhost:8080/mcp", "https://deepwiki.com/mcp/free",
    "https://example.com/server/mcp/", "https://mcp.example.com", "HTTPS://EXAMPLE.COM/MCP",
    "https://example.com/mcpserver", "https://example.com/mcp#frag", "ftp://mcp.example.com/mcp", "/math_guy",
    "http://a/mcpx", " https://a/mcp ", "https://a/mcp?x=1", "https://user:pw@mcp.a.com:8/x", "https://a/mcp#",
    "http://localhost:8080/math_guy", "mcp", "https:///mcp", "grpc://mcp.example.com/x",
]  # fmt: skip
NAMES = ["a/b", "é/x", "a.b c", "x-y", "deep/math_guy", "Agent.1", "a b/c", "a__b"]
SERVER_TOOLS = ["add/numbers", "b/c", "b__c", "echo", "x.y"]
ALLOW_LISTS = [["add__numbers"], ["b/c"], ["b__c"], ["nope", "echo"], ["x_y"], ["x.y", "b.c"], []]

UPSTREAM_SCRIPT = """
import json, sys
from neuro_san.internals.utils.external_agent_parsing import ExternalAgentParsing
from neuro_san.internals.utils.mcp_tool_name_filter import McpToolNameFilter
from neuro_san.internals.utils.mcp_tool_name_policy import McpToolNamePolicy
given = json.load(sys.stdin)
policy = McpToolNamePolicy()
print(json.dumps({
    "refs": [ExternalAgentParsing.is_mcp_tool(r) for r in given["refs"]],
    "names": [McpToolNameFilter().filter(n) for n in given["names"]],
    "selected": [policy.select_allowed(a, given["tools"]) for a in given["allow"] if a],
    "missing": [policy.find_unmatched(a, given["tools"]) for a in given["allow"] if a],
}))
"""


@pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to compare with neuro-san 0.7.15")
def test_mcp_naming_and_matching_agree_with_neuro_san(tmp_path: Path) -> None:
    given = {"refs": REFS, "names": NAMES, "tools": SERVER_TOOLS, "allow": ALLOW_LISTS}
    # Run outside the repository, or `import neuro_san` would find our package, not theirs.
    result = subprocess.run(
        [UPSTREAM, "-c", UPSTREAM_SCRIPT], input=json.dumps(given), capture_output=True, text=True,
        timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in SERVER_TOOLS]
    picks = [select_tools(tools, tuple(a)) for a in ALLOW_LISTS if a]
    ours = {
        "refs": [is_mcp_url(r) for r in REFS],
        "names": [safe_tool_name(n) for n in NAMES],
        "selected": [[t.name for t in chosen] for chosen, _ in picks],
        "missing": [missing for _, missing in picks],
    }
    assert ours == theirs
