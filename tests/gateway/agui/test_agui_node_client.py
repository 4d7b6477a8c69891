"""The official AG-UI client, ``@ag-ui/client``'s ``HttpAgent`` (npm), runs a network.

``npm install`` runs once into tests/node_agui/node_modules (git-ignored). The test is
skipped only when node or npm is missing, or when the package cannot be installed (no
registry reachable), and says which. The server runs the bundled math_guy (offline
scripted model): two runs on one thread, then a network that is not there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agui.agui_client import NODE_DIR, node_or_skip
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def seen(server: ServerProcess) -> dict[str, Any]:
    node = node_or_skip()
    result = subprocess.run([str(node), str(NODE_DIR / "run.mjs"), server.http_base, "math_guy"],
                            capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
    assert result.returncode == 0, result.stderr + server.log()[-2000:]
    output: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return output


def test_the_client_sees_the_answer_the_tool_call_and_the_state(seen: dict[str, Any]) -> None:
    first = seen["first"]
    assert first["said"] == ["The answer is 42."]
    assert first["types"][0] == "RUN_STARTED" and first["types"][-1] == "RUN_FINISHED"
    assert {"TOOL_CALL_START", "TOOL_CALL_RESULT", "STEP_STARTED", "TEXT_MESSAGE_CONTENT"} <= set(first["types"])
    assert "tool" in first["roles"]  # the client made the tool call's result a message of its own
    assert seen["state"] == {"equals": 42}  # STATE_SNAPSHOT, applied by the client


def test_the_client_continues_its_thread(seen: dict[str, Any]) -> None:
    # The second run sends the client's whole message list (tool messages included) and
    # the same threadId: the server continues from the thread it kept.
    assert seen["second"]["said"] == ["You asked: What is 6 * 7?"]


def test_a_missing_network_is_an_error_the_client_raises(seen: dict[str, Any]) -> None:
    assert "404" in seen["missing"], seen["missing"]


def test_the_readmes_example_runs(server: ServerProcess) -> None:
    """The README's JavaScript example, as a user pastes it (the README's port made the server's)."""
    node = node_or_skip()
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    [example] = re.findall(r"^```js\n(.*?)^```", readme, re.S | re.M)
    script = NODE_DIR / f"readme_example_{os.getpid()}.mjs"  # beside node_modules, so the import resolves
    script.write_text(example.replace("localhost:8080", f"127.0.0.1:{server.http_port}"))
    try:
        result = subprocess.run([str(node), str(script)], capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
    finally:
        script.unlink()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["The answer is 42.", '{"equals":42}']
