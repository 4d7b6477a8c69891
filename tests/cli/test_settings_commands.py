"""The settings at the command line (issue 35, item 2): ``serve`` and ``gateway`` refuse a
malformed value in one line, ``serve`` warns once about an unknown ``AGENT_*`` variable, ``neuro-san
config`` prints every setting with its value and source, and a client command checks only its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from neuro_san.settings import catalog
from tests.support.servers import ROOT

pytestmark = pytest.mark.slow


def _run(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "neuro_san.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=ROOT)


def _json_lines(output: str, level: str) -> list[str]:
    return [json.loads(line)["message"] for line in output.splitlines()
            if line.startswith("{") and f'"{level}"' in line]


@pytest.mark.parametrize(("name", "value", "words"), [
    ("AGENT_HTTP_PORT", "abc", ("'abc'", "is not a number")),
    ("AGENT_SERVICE_LOG_JSON", "maybe", ("'maybe'", "not a switch")),
    ("AGENT_GRPC_KEEPALIVE_SECONDS", "soon", ("'soon'", "is not a number")),
])
def test_serve_refuses_a_malformed_value_in_one_line(name: str, value: str, words: tuple[str, ...]) -> None:
    done = _run("serve", "--host", "127.0.0.1", "--port", "0", "--http-port", "0", env={name: value})
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output, output
    [line] = _json_lines(output, "ERROR")
    assert name in line and all(word in line for word in words), line


def test_the_standalone_gateway_refuses_a_malformed_value_in_one_line() -> None:
    done = _run("gateway", "--target", "127.0.0.1:1", "--port", "0", env={"AGENT_GRPC_TARGET_TLS": "maybe"})
    errors = [line for line in done.stderr.splitlines() if " ERROR " in line]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(errors) == 1 and "AGENT_GRPC_TARGET_TLS='maybe' is not a switch" in errors[0], errors


def test_serve_warns_once_about_an_unknown_agent_variable() -> None:
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", "--port", "0", "--no-http"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "AGENT_MAX_CONCURENT_REQUESTS": "4"}
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
    warnings = [w for w in _json_lines(output, "WARNING") if "AGENT_MAX_CONCURENT_REQUESTS" in w]
    assert len(warnings) == 1 and "did you mean AGENT_MAX_CONCURRENT_REQUESTS?" in warnings[0], warnings


def test_config_prints_every_setting_its_value_and_its_source() -> None:
    env = {"OPENAI_API_KEY": "sk-do-not-show", "AGENT_SERVER_NAME": "shown", "AGENT_MCP_ENABLE": "off"}
    for name in ("AGENT_PORT", "AGENT_HTTP_PORT"):
        env[name] = ""  # the defaults, whatever the caller's shell says
    done = _run("config", "--json", "--port", "5", env=env)
    assert done.returncode == 0, done.stderr
    assert "sk-do-not-show" not in done.stdout
    rows = {row["name"]: row for row in map(json.loads, done.stdout.splitlines()) if "value" in row}
    assert {name for name, declared in catalog().items() if not declared.internal} <= set(rows)
    assert (rows["OPENAI_API_KEY"]["value"], rows["OPENAI_API_KEY"]["source"]) == ("***", "environment")
    assert (rows["AGENT_SERVER_NAME"]["value"], rows["AGENT_SERVER_NAME"]["source"]) == ("shown", "environment")
    assert (rows["AGENT_MCP_ENABLE"]["value"], rows["AGENT_MCP_ENABLE"]["source"]) == ("false", "environment")
    assert (rows["AGENT_PORT"]["value"], rows["AGENT_PORT"]["source"]) == ("5", "flag")
    assert (rows["AGENT_HTTP_PORT"]["value"], rows["AGENT_HTTP_PORT"]["source"]) == ("8080", "default")


def test_config_names_a_malformed_value_and_an_unknown_one() -> None:
    done = _run("config", env={"AGENT_MCP_ENABLE": "ture", "AGENT_HTTP_PROT": "1"})
    assert done.returncode == 2
    assert done.stderr.strip() == ("neuro-san: AGENT_MCP_ENABLE='ture' is not a switch: use true or false "
                                   "(also 1/0, yes/no, on/off)")
    assert "AGENT_HTTP_PROT: not a known setting, changes nothing (did you mean AGENT_HTTP_PORT?)" in done.stdout
    assert "where the value came from" in " ".join(_run("config", "--help").stdout.split())


def test_a_server_setting_does_not_stop_a_client_command() -> None:
    """``neuro-san function`` reads no server switch: a typo there is serve's to refuse."""
    done = _run("function", "hello_world", "--port", "1", "--timeout", "5", env={"AGENT_MCP_ENABLE": "ture"})
    assert "AGENT_MCP_ENABLE" not in done.stderr and done.returncode == 4, done.stderr
