"""A bounded schemathesis run against the gateway: no 5xx, no response that breaks the
API's OpenAPI document (the gateway's own, and the seed's), streams included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import ServerProcess, start_server

HERE = Path(__file__).resolve().parents[2]
SEED = HERE / "fixtures" / "gateway" / "agent-service.openapi.yaml"
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    ]
)


def _schemathesis(location: str, base_url: str, seconds: int) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("schemathesis") or str(Path(sys.executable).parent / "schemathesis")
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks", "PYTHONPATH": str(HERE.parent)}
    command = [binary, "run", location, "--url", base_url, "--checks", CHECKS, "--max-time", str(seconds)]
    command += ["--workers", "2", "--seed", "1", "--max-examples", "40"]
    return subprocess.run(command, capture_output=True, text=True, timeout=seconds + 90, env=env, cwd=HERE.parent)


@pytest.fixture(scope="module")
def gateway() -> ServerProcess:
    with start_server(http=True) as server:
        yield server  # type: ignore[misc]


@pytest.mark.parametrize("document", ["served", "seed"])
def test_schemathesis_finds_nothing(gateway: ServerProcess, document: str) -> None:
    location = f"{gateway.http_base}/api/v1/docs" if document == "served" else str(SEED)
    result = _schemathesis(location, gateway.http_base, seconds=20)
    summary = result.stdout[-3000:]
    assert result.returncode == 0, summary + result.stderr[-2000:]
    assert "passed" in summary and "generated" in summary
