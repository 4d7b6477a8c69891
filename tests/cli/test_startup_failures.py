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


def test_an_unreachable_redis_at_start_is_one_warning_and_the_server_serves() -> None:
    """Not a refusal: the shared state recovers when Redis comes back. But said at start, once."""
    url = f"redis://user:secret@127.0.0.1:{free_port()}/0"
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", "--port", "0",
            "--http-port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "AGENT_REDIS_URL": url}
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("READY "):
                break
    finally:
        process.terminate()
        process.wait(15)
    output = "".join(lines)
    assert any(line.startswith("READY ") for line in lines), output
    warnings = [json.loads(line)["message"] for line in lines if line.startswith("{") and '"WARNING"' in line]
    assert [w for w in warnings if "AGENT_REDIS_URL" in w] == [w for w in warnings if "Redis" in w], warnings
    [warning] = [w for w in warnings if "AGENT_REDIS_URL" in w]
    assert "does not answer at start" in warning and "secret" not in warning and "***" in warning
    assert "Traceback" not in output


@pytest.mark.parametrize("name", ["AGENT_MCP_ENABLE", "AGENT_A2A_ENABLE", "AGENT_PLAYGROUND", "AGENT_TRACING"])
def test_a_switch_that_is_not_one_refuses_to_start(name: str) -> None:
    """One grammar for every switch (true/false, 1/0, yes/no, on/off); a typo is refused, never
    read as off (AGENT_MCP_ENABLE=ture used to hide /mcp silently)."""
    _one_line(_serve(["--port", "0", "--http-port", "0"], {name: "ture"}), name, "'ture'", "not a switch")
