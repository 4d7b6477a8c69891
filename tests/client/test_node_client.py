"""A client in another language: Node with @grpc/grpc-js and stubs loaded from protos/.

``npm install`` runs once into tests/node/node_modules (git-ignored). The test is
skipped only when node or npm is missing, or when the packages cannot be installed
(no registry reachable), and says which.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.node_packages import node_with
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


def _installed() -> Path:
    return Path(node_with(NODE_DIR, "@grpc/proto-loader", "Node client"))


@pytest.fixture(scope="module")
def node_output(server: ServerProcess) -> dict[str, Any]:
    node = _installed()
    result = subprocess.run(
        [str(node), str(NODE_DIR / "client.js"), server.grpc_target],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    output: dict[str, Any] = json.loads(result.stdout)
    return output


def test_node_lists_and_reads_functions(node_output: dict[str, Any]) -> None:
    assert node_output["list"] == ["echo", "hello_world", "math_guy", "math_guy_passthrough"]
    function = node_output["function"]
    assert function["description"] == "I do arithmetic."
    assert function["parameters"]["properties"]["expression"]["type"] == "string"
    assert node_output["deep_function"] == "I do arithmetic."  # an agent name with '/'


def test_node_streams_a_maximal_chat(node_output: dict[str, Any]) -> None:
    chat = node_output["chat"]
    assert [m["type"] for m in chat][:3] == ["SYSTEM", "HUMAN", "AGENT"]
    assert chat[2]["structure"] == {"invoking_start": True, "invoked_agent_name": "calculator",
                                    "params": {"expression": "6 * 7"}}
    progress = next(m for m in chat if m["type"] == "AGENT_PROGRESS")
    assert progress["origin"] == ["math_guy", "calculator"] and progress["text"] == "evaluating"
    final = chat[-1]
    assert final["type"] == "AGENT_FRAMEWORK" and final["origin"] == []
    assert final["text"] == "The answer is 42."
    assert final["sly_data"] == {"equals": 42}
    assert final["history_length"] == 3  # HUMAN, the tool output (kept as neuro-san does), AI


def test_node_sees_not_found_for_an_unknown_agent(node_output: dict[str, Any]) -> None:
    assert node_output["unknown_agent"] == {"code": 5, "details": "agent 'no_such_agent' is not served here"}
