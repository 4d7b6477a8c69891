"""Other MCP clients against our ``/mcp``: the MCP Inspector's CLI (from npm, at test
time; skipped when npm cannot fetch it) and neuro-san 0.7.15's own ``agent_cli --mcp``
(opt-in: set NEURO_SAN_UPSTREAM_PYTHON, as for tests/client/test_upstream_client.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp import mcp_server
from tests.support.servers import ServerProcess

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")
INSPECTOR = "@modelcontextprotocol/inspector"
#: npm's words for "cannot reach the registry" (offline machines skip, not fail).
OFFLINE_MARKERS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "network request", "ENETUNREACH")


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Without API keys: neither client can send one (the Inspector's CLI has no header option)."""
    with mcp_server(Path(tmp_path_factory.mktemp("mcp-open")), keys=False) as server:
        yield server


def _inspector(server: ServerProcess, *args: str, cwd: Path) -> dict[str, object]:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npm is not installed")
    command = [npx, "-y", INSPECTOR, "--cli", f"{server.http_base}/mcp", "--transport", "http", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd)
    if result.returncode != 0 and any(marker in result.stderr for marker in OFFLINE_MARKERS):
        pytest.skip(f"npm cannot fetch {INSPECTOR}: {result.stderr[-300:]}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    parsed: dict[str, object] = json.loads(result.stdout)
    return parsed


def test_the_mcp_inspector_lists_and_calls_our_tools(open_server: ServerProcess, tmp_path: Path) -> None:
    listing = _inspector(open_server, "--method", "tools/list", cwd=tmp_path)
    tools = {tool["name"]: tool for tool in listing["tools"]}  # type: ignore[attr-defined]
    assert set(tools) == {"math_guy", "parrot", "tools__math_guy"}  # without keys, deep/math_guy stays private
    called = _inspector(open_server, "--method", "tools/call", "--tool-name", "tools__math_guy",
                        "--tool-arg", 'user_message={"text": "6 * 7"}', cwd=tmp_path)
    assert called["content"] == [{"type": "text", "text": "The answer is 42."}]
    assert called["structuredContent"]["sly_data"] == {"equals": 42}  # type: ignore[index]


@pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to run neuro-san 0.7's own MCP client")
@pytest.mark.parametrize("agent", ["math_guy", "tools/math_guy", "echo"])
def test_neuro_san_agent_cli_chats_over_mcp(open_server: ServerProcess, tmp_path: Path, agent: str) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("6 * 7")
    command = [UPSTREAM, "-m", "neuro_san.client.agent_cli", "--mcp", "--host", "127.0.0.1",
               "--port", str(open_server.http_port), "--agent", agent, "--first_prompt_file", str(prompt), "--one_shot"]
    # Outside the repository, or `-m neuro_san…` would find our package, not theirs.
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    expected = "6 * 7" if agent == "echo" else "The answer is 42."
    assert expected in result.stdout.split("Response from agent network:")[-1], result.stdout[-2000:]
