"""Start-up failures a user can cause: one clear ERROR line, exit 2, no traceback (issue 34)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ROOT, free_port

pytestmark = pytest.mark.slow


def _serve(args: list[str], env: dict[str, str] | None = None) -> tuple[int, list[str], str]:
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    done = subprocess.run([sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", *args],
                          capture_output=True, text=True, timeout=30, env=full_env, cwd=ROOT)
    output = done.stdout + done.stderr
    errors = [json.loads(line)["message"] for line in output.splitlines()
              if line.startswith("{") and '"ERROR"' in line]
    return done.returncode, errors, output


@pytest.fixture
def taken() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _one_line(result: tuple[int, list[str], str], *words: str) -> None:
    code, errors, output = result
    assert code == 2, output
    assert "Traceback" not in output, output
    assert len(errors) == 1, output
    for word in words:
        assert word in errors[0], errors[0]


def test_grpc_port_in_use_names_the_port_setting_and_flag(taken: int) -> None:
    _one_line(_serve(["--port", str(taken), "--no-http"]), str(taken), "AGENT_PORT", "--port", "in use")


def test_http_port_in_use_names_the_port_setting_and_flag(taken: int) -> None:
    _one_line(_serve(["--port", "0", "--http-port", str(taken)]), str(taken), "AGENT_HTTP_PORT", "--http-port")


def test_unreadable_certificate_files(tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.pem")
    _one_line(_serve(["--port", "0", "--no-http"], {"AGENT_TLS_CERT_FILE": missing, "AGENT_TLS_KEY_FILE": missing}),
              "absent.pem")


def test_redis_url_without_the_redis_package_says_which_extra(tmp_path: Path) -> None:
    # A `redis` that cannot be imported stands in for an install without the extra.
    fake = tmp_path / "redis"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'redis'\", name='redis')\n")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "AGENT_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    _one_line(_serve(["--port", "0", "--http-port", "0"], env), "AGENT_REDIS_URL", "neuro-san-grpc[redis]")
