"""The README, run: every command and example it shows, against live servers.

The shell lines of the quick start run as a user would paste them (``bash -c``, with the
virtualenv's ``bin`` first on PATH), with the README's ports (30011, 8080) rewritten to
the test server's. The Python example runs in a subprocess. "Writing an agent network" is a
walkthrough, run in order as typed, in an empty directory: its shell lines run, its files are
written at the paths their first-line comments give, its ``neuro-san serve`` line starts the
server (on free ports) and its chat must answer. Elsewhere, lines that start a server
(``make run``, ``neuro-san serve``) are not run: their targets, flags and environment
variables are checked instead. Every environment
variable the README names must appear in the code, so its tables cannot rot.

A README command with no expectation below fails the test: a new command must say what
it should print.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ROOT, ServerProcess, free_port, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

# Overridable so a mutated copy can show that these tests fail when a command breaks.
README = Path(os.environ.get("README_UNDER_TEST", ROOT / "README.md"))
VENV_BIN = Path(sys.executable).parent
README_GRPC_PORT, README_HTTP_PORT = "30011", "8080"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
COMMAND_TIMEOUT = 30

WALKTHROUGH = "## Writing an agent network"
WALKTHROUGH_PORTS = ("30012", "8082")


def readme_text(walkthrough: bool = False) -> str:
    """The README without its walkthrough section, or (``walkthrough``) that section alone."""
    text = README.read_text()
    head, found, rest = text.partition(WALKTHROUGH)
    assert found, f"the README has no {WALKTHROUGH!r} section"
    section, _, tail = rest.partition("\n## ")
    return found + section if walkthrough else head + "\n## " + tail


def readme_blocks(language: str, text: str | None = None) -> list[str]:
    return [body for lang, body in FENCE.findall(text or README.read_text()) if lang == language]


def shell_lines(block: str) -> list[str]:
    """The commands of a ```sh block, continuation lines joined."""
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def inline_commands() -> list[str]:
    """Commands quoted inline in the prose (``neuro-san …``, ``VAR=… neuro-san …``)."""
    text = FENCE.sub("", readme_text())
    spans = re.findall(r"`([^`\n]+)`", text)
    return [s for s in spans if re.match(r"^([A-Z_]+=\S+ )*neuro-san \w", s)]


def all_commands() -> list[str]:
    """The quick start's and the reference's commands (the walkthrough is run on its own)."""
    commands = [line for block in readme_blocks("sh", readme_text()) for line in shell_lines(block)]
    return commands + inline_commands()


def starts_a_server(command: str) -> bool:
    """``make run``, ``neuro-san serve`` (and ``make test``, ``make test-fast``): checked, not run here."""
    words = [w for w in shlex.split(command, comments=True) if not re.match(r"^[A-Z_]+=", w)]
    return words[:2] in (["make", "run"], ["make", "test"], ["make", "test-fast"], ["neuro-san", "serve"])


CLIENT_COMMANDS = [c for c in all_commands() if not starts_a_server(c)]
SERVER_COMMANDS = [c for c in all_commands() if starts_a_server(c)]

AGENT_SERVICE = "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService"


def expectations(command: str) -> list[str]:
    """What a README command must print: every string listed."""
    if command.endswith("/v1/models"):
        return ['"object":"model"', '"id":"math_guy"']
    if "/v1/chat/completions" in command:
        return ['"object":"chat.completion"', '"content":"The answer is 42."', '"finish_reason":"stop"']
    if "hello world" in command and "curl " in command:  # curl and grpcurl: raw messages
        return ["AGENT_FRAMEWORK", "Announcement: Greetings, planet!", "chat_context"]
    if command.startswith("neuro-san chat hello_world"):
        return ["Announcement: Greetings, planet!"]
    if command.startswith("neuro-san chat math_guy") and "--maximal" in command:
        return ["calculator", "The answer is 42."]
    if command.startswith("neuro-san connectivity hello_world") and "mermaid" in command:
        return ["announcer", "synonymizer"]
    if command.startswith("grpcurl") and command.endswith(" list"):
        return [AGENT_SERVICE]
    if "/mcp" in command and "tools/list" in command:
        return ['"name":"math_guy"', '"inputSchema":{"type":"object"']
    if command.startswith("neuro-san config"):
        return ["AGENT_PORT", "AGENT_MCP_ENABLE", "OPENAI_API_KEY"]
    if "/ag-ui/" in command:  # the AG-UI event stream
        return ['"type":"RUN_STARTED"', '"type":"TOOL_CALL_START"', '"delta":"42."', '"snapshot":{"equals":42}',
                '"type":"RUN_FINISHED"']
    if command.endswith("/api/v1/list") or command.startswith("neuro-san list"):
        return ["hello_world", "math_guy", "echo"]
    raise AssertionError(f"no expectation for the README command {command!r}: add one to this test")


def rewrite_ports(command: str, server: ServerProcess) -> str:
    """The README's ports to the test server's; the CLI's default port made explicit."""
    command = command.replace(":" + README_HTTP_PORT, f":{server.http_port}")
    command = command.replace(":" + README_GRPC_PORT, f":{server.grpc_port}")
    command = re.sub(rf"--port[= ]{README_HTTP_PORT}\b", f"--port {server.http_port}", command)
    command = re.sub(rf"--port[= ]{README_GRPC_PORT}\b", f"--port {server.grpc_port}", command)
    words = shlex.split(command, comments=True)
    if words[0] == "neuro-san" and "--port" not in words and "--url" not in words:
        port = server.http_port if "--http" in words else server.grpc_port
        command = shlex.join([*words, "--port", str(port)])
    return command


def venv_env(**extra: str) -> dict[str, str]:
    """The environment a user of the README has: the virtualenv first on PATH, and no
    stray AGENT_LLM_OVERRIDE from the caller's shell."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("AGENT_LLM_OVERRIDE", None)
    return {**env, **extra}


def run_shell(command: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, cwd=cwd, env=venv_env(**env)
    )


@pytest.fixture(scope="module")
def live() -> Iterator[ServerProcess]:
    """The bundled examples, as ``make run`` serves them, on gRPC and HTTP."""
    with start_server(http=True) as server:
        yield server


def test_the_readme_shows_what_the_issue_asks_for() -> None:
    """The quick start has every kind of example, so the tests below have something to run."""
    commands = all_commands()
    assert any(c.startswith("make run") for c in commands)
    assert any(c.startswith("curl") for c in commands) and any(c.startswith("grpcurl") for c in commands)
    assert any(c.startswith("neuro-san chat") for c in commands)
    assert len(readme_blocks("python", readme_text())) == 4 and len(readme_blocks("hocon")) == 2
    assert any("AGENT_LLM_OVERRIDE=" in c for c in commands)


def short_id(command: str) -> str:
    return re.sub(r"\s+", " ", command.split("#")[0]).strip()[:70]


@pytest.mark.parametrize("command", CLIENT_COMMANDS, ids=short_id)
def test_readme_command_works(live: ServerProcess, command: str) -> None:
    result = run_shell(rewrite_ports(command, live))
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}\n{live.log()[-2000:]}"
    for expected in expectations(command):
        assert expected in result.stdout, f"{command}: {expected!r} not in\n{result.stdout}"
    # Answers a newcomer would call answers: no error, no scripted stand-in or prompt text.
    for leak in ("Error", "scripted synonym", "Give one synonym", "not arithmetic"):
        assert leak not in result.stdout, f"{command}: {leak!r} in\n{result.stdout}"
    if command.startswith("curl") and "streaming_chat" in command:
        last = json.loads(result.stdout.strip().splitlines()[-1])["response"]
        assert last["type"] == "AGENT_FRAMEWORK" and last["chat_context"]["chat_histories"]


@pytest.fixture(scope="module")
def serve_help() -> str:
    result = subprocess.run([VENV_BIN / "neuro-san", "serve", "--help"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


@functools.cache
def server_code() -> str:
    """The server's code (neuro_san/, gateway/ and mcp_frontend/), all in one string."""
    packages = ("neuro_san", "gateway", "gateway.mcp")
    paths = [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]
    return "\n".join(path.read_text(errors="replace") for path in paths)


def code_mentions(name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", server_code()) is not None


@pytest.mark.parametrize("command", SERVER_COMMANDS, ids=short_id)
def test_readme_server_command_is_well_formed(command: str, serve_help: str) -> None:
    """Lines that start a server are not run; what they rely on must exist."""
    words = shlex.split(command, comments=True)
    assignments = [w for w in words if re.match(r"^[A-Z_]+=", w)]
    words = words[len(assignments):]
    makefile = (ROOT / "Makefile").read_text()
    if words[0] == "make":
        assert re.search(rf"^{words[1]}:", makefile, re.M), f"no make target {words[1]!r}"
    if words[:2] == ["make", "run"]:
        recipe = re.search(r"^run:.*\n\t(.*)", makefile, re.M)
        assert recipe and "neuro-san serve" in recipe.group(1)
        # The README promises gRPC :30011 and HTTP :8080 by default.
        assert f"default {README_GRPC_PORT}" in serve_help and f"default {README_HTTP_PORT}" in serve_help
    for flag in (w.split("=")[0] for w in words if w.startswith("--")):
        assert flag in serve_help, f"{command}: {flag} is not a flag of neuro-san serve"
    for assignment in assignments:
        name, value = assignment.split("=", 1)
        assert name in serve_help or code_mentions(name), f"{command}: {name} is read nowhere"
        if name == "AGENT_LLM_OVERRIDE":
            from neuro_san.llm.factory import parse_override

            override = json.loads(value)
            assert parse_override(value) == override and override.get("class")


def test_every_environment_variable_the_readme_names_is_read_by_the_code() -> None:
    text = README.read_text()
    names = set(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`", text))
    table = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for row in (line for line in table.splitlines() if line.startswith("| `")):
        names.update(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`", row.split("|")[1]))
    names -= {"AGENT_FRAMEWORK", "AGENT_PROGRESS"}  # message types, not settings
    assert {"AGENT_MANIFEST_FILE", "AGENT_TOOL_PATH", "AGENT_LLM_OVERRIDE", "OPENAI_API_KEY"} <= names
    missing = sorted(name for name in names if not code_mentions(name))
    assert not missing, f"the README names settings the code never reads: {missing}"


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_readme_python_example(live: ServerProcess, transport: str) -> None:
    [example] = [b for b in readme_blocks("python") if "AgentClient" in b]
    http_call = re.search(r'AgentClient\.http\("[^"]+"\)', example)
    assert http_call, "the Python example no longer mentions its HTTP twin"
    if transport == "http":  # the variant the comment offers
        example = re.sub(r'AgentClient\.grpc\("[^"]+"\)', http_call.group(0), example)
    example = example.replace(":" + README_GRPC_PORT, f":{live.grpc_port}")
    example = example.replace(":" + README_HTTP_PORT, f":{live.http_port}")
    result = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    names, first, second = result.stdout.splitlines()
    assert {"hello_world", "echo", "math_guy"} <= set(eval(names))  # noqa: S307 - a printed list of str
    # The second answer names the first question: the conversation was carried.
    assert (first, second) == ("The answer is 42.", "You asked: What is 6 * 7?")


def test_readme_openai_example(live: ServerProcess) -> None:
    """The OpenAI SDK snippet: a chat completion, then a response continued by its id."""
    [example] = [b for b in readme_blocks("python") if "from openai import OpenAI" in b]
    example = example.replace(":" + README_HTTP_PORT, f":{live.http_port}")
    result = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr + live.log()[-2000:]
    assert result.stdout.splitlines() == ["The answer is 42.", "You asked: What is 6 * 7?"]


@pytest.mark.parametrize("binding", ["jsonrpc", "grpc"])
def test_readme_a2a_example(live: ServerProcess, binding: str) -> None:
    """The A2A snippet with the official SDK; the gRPC one is the lines it says to put in main()."""
    [example] = [b for b in readme_blocks("python") if "create_client" in b and "asyncio.run" in b]
    if binding == "grpc":
        [lines] = [b for b in readme_blocks("python") if "supported_protocol_bindings" in b]
        swapped = "\n".join(line for line in lines.splitlines() if not line.startswith("#"))
        example = "import grpc\n" + re.sub(r"^ +client = await create_client\(.*?\)\)\n", swapped + "\n",
                                          example, flags=re.M | re.S)
        assert "supported_protocol_bindings" in example
    example = example.replace(":" + README_HTTP_PORT, f":{live.http_port}")
    result = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr + live.log()[-2000:]
    assert result.stdout.strip() == "The answer is 42."


def test_the_walkthrough_runs_as_typed(tmp_path: Path) -> None:
    """"Writing an agent network", in order: shell lines run (``cd`` included), files are written
    where their first-line comment says, the serve line serves (its ports made free), and the
    chat answers through the coded tool, with no error, placeholder or scripted text."""
    section = readme_text(walkthrough=True)
    ports = {port: str(free_port()) for port in WALKTHROUGH_PORTS}
    cwd, env = tmp_path, {"AGENT_LLM_OVERRIDE": ""}
    outputs: list[str] = []
    servers: list[ServerProcess] = []
    try:
        for language, body in FENCE.findall(section):
            if language in ("hocon", "python"):
                match = re.match(r"# ([\w/.]+)", body)
                assert match, f"a walkthrough file without its path comment:\n{body[:200]}"
                (cwd / match.group(1)).write_text(body)
                continue
            assert language == "sh", f"a walkthrough block of {language!r}: the test cannot run it"
            for line in shell_lines(body):
                for readme_port, port in ports.items():
                    line = line.replace(readme_port, port)
                if starts_a_server(line):
                    servers.append(serve_line(line, cwd, venv_env(**env)))
                    continue
                # ``pwd`` last: a ``cd`` in the line moves the rest of the walkthrough.
                run = run_shell(f"{line}\npwd", cwd=cwd, **env)
                assert run.returncode == 0, f"{line}\n{run.stdout}\n{run.stderr}"
                *printed, where = run.stdout.rstrip("\n").split("\n")
                cwd = Path(where)
                outputs.append("\n".join(printed))
        assert servers, "the walkthrough never serves its network"
    finally:
        for server in servers:
            server.terminate()
    chat = outputs[-1]
    lines = [line.strip() for line in chat.splitlines() if line.strip()]
    assert 'front.calculator agent_progress: {"progress":0.5}' in lines, chat  # the coded tool ran
    assert lines[-2:] == ["The answer is 42.", 'sly_data: {"equals":42}'], chat
    for leak in ("scripted", "Error", "{", "eval_arithmetic"):
        assert leak not in lines[-2], chat


def serve_line(line: str, cwd: Path, env: dict[str, str]) -> ServerProcess:
    """The walkthrough's ``neuro-san serve`` line, started as typed (in the background)."""
    words = shlex.split(line)
    assignments = dict(word.split("=", 1) for word in words if re.match(r"^[A-Z_]+=", word))
    command = [VENV_BIN / "neuro-san", *words[len(assignments) + 1:], "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [str(part) for part in command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=cwd, env={**env, **assignments, "PYTHONUNBUFFERED": "1"},
    )
    grpc_port = int(words[words.index("--port") + 1])
    server = ServerProcess(process, grpc_port, 0)
    lines = server.output
    deadline = time.monotonic() + 30
    assert process.stdout is not None
    for output in process.stdout:
        lines.append(output)
        if output.startswith("READY ") or time.monotonic() > deadline:
            break
    threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True).start()
    assert any(out.startswith("READY ") for out in lines), f"{line} did not start:\n{server.log()}"
    return server
