"""The official ``openai`` SDK for JavaScript (npm) against ``neuro-san serve``'s ``/v1``.

``npm install`` runs once into tests/node_openai/node_modules (git-ignored). Skipped only
when node or npm is missing, or when the package cannot be installed (no registry
reachable), saying which. The server is a real ``neuro-san serve`` on loopback whose
networks run on the fake LLM.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_thread import FakeInThread, override_env
from tests.support.node_packages import node_with
from tests.support.servers import start_server

pytestmark = pytest.mark.slow

NODE_DIR = Path(__file__).resolve().parents[2] / "node_openai"


def _node() -> str:
    return node_with(NODE_DIR, "openai", "JavaScript SDK")


@pytest.fixture(scope="module")
def seen() -> Iterator[dict[str, Any]]:
    node = _node()
    with FakeInThread() as fake, start_server(env=override_env(fake), http=True) as server:
        result = subprocess.run([node, str(NODE_DIR / "client.mjs"), f"{server.http_base}/v1", "hello_world"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr + server.log()
        yield json.loads(result.stdout)


def test_models_and_chat_completions(seen: dict[str, Any]) -> None:
    assert "hello_world" in seen["models"]
    assert seen["completion"]["content"] and seen["completion"]["finish"] == "stop"
    assert seen["completion"]["total_tokens"] >= 0
    assert seen["stream"]["text"] and seen["stream"]["usage_seen"]


def test_responses_continue_and_stream(seen: dict[str, Any]) -> None:
    assert seen["responses"]["first"] and seen["responses"]["second"] and seen["responses"]["previous"]
    assert seen["response_events"] == ["response.created", "response.completed"]


def test_an_unknown_model_is_the_sdks_not_found_error(seen: dict[str, Any]) -> None:
    assert seen["not_found"] == {"name": "NotFoundError", "status": 404, "code": "model_not_found"}
