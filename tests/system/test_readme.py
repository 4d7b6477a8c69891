"""The README, run: every command and example it shows, against live servers.

The shell lines of the quick start run as a user would paste them (``bash -c``, with the
virtualenv's ``bin`` first on PATH), with the README's ports (30011, 8080) rewritten to
the test server's. The Python example runs in a subprocess. The network, manifest and
coded tool of "Writing an agent network" are written to a temporary directory at the
paths their first-line comments give, validated, and served; one chat goes through the
coded tool. Lines that start a server (``make run``, ``neuro-san serve``) are not run:
their targets, flags and environment variables are checked instead. Every environment
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
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import BUNDLED_MANIFEST, ROOT, ServerProcess, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

# Overridable so a mutated copy can show that these tests fail when a command breaks.
README = Path(os.environ.get("README_UNDER_TEST", ROOT / "README.md"))
VENV_BIN = Path(sys.executable).parent
README_GRPC_PORT, README_HTTP_PORT = "30011", "8080"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
COMMAND_TIMEOUT = 30

# The coded tool example calls eval_arithmetic, "your code": this is ours, written into
# the module before the README's class.
EVAL_ARITHMETIC = '''
import ast as _ast


def eval_arithmetic(expression: str) -> float | int:
    tree = _ast.parse(expression, mode="eval")
    allowed = (_ast.Expression, _ast.BinOp, _ast.UnaryOp, _ast.Constant, _ast.operator, _ast.unaryop)
    if not all(isinstance(node, allowed) for node in _ast.walk(tree)):
        raise ValueError("not arithmetic")
    return eval(compile(tree, "<arithmetic>", "eval"), {"__builtins__": {}})

'''

# The manifest example names a private network the README does not show: a stand-in.
PRIVATE_OTHER = '{"tools": [{"name": "other", "function": {"description": "Private."}, "instructions": "Echo."}]}'


def readme_blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README.read_text()) if lang == language]


def shell_lines(block: str) -> list[str]:
    """The commands of a ```sh block, continuation lines joined."""
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def inline_commands() -> list[str]:
    """Commands quoted inline in the prose (``neuro-san …``, ``VAR=… neuro-san …``)."""
    text = FENCE.sub("", README.read_text())
    spans = re.findall(r"`([^`\n]+)`", text)
    return [s for s in spans if re.match(r"^([A-Z_]+=\S+ )*neuro-san \w", s)]


def all_commands() -> list[str]:
    commands = [line for block in readme_blocks("sh") for line in shell_lines(block)]
    return commands + inline_commands()


def starts_a_server(command: str) -> bool:
    """``make run``, ``neuro-san serve`` (and ``make test``, ``make test-fast``): checked, not run here."""
    words = [w for w in shlex.split(command, comments=True) if not re.match(r"^[A-Z_]+=", w)]
    return words[:2] in (["make", "run"], ["make", "test"], ["make", "test-fast"], ["neuro-san", "serve"])


def is_validate(command: str) -> bool:
    return command.startswith("neuro-san validate")


CLIENT_COMMANDS = [c for c in all_commands() if not starts_a_server(c) and not is_validate(c)]
SERVER_COMMANDS = [c for c in all_commands() if starts_a_server(c)]

AGENT_SERVICE = "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService"


def expectations(command: str) -> list[str]:
    """What a README command must print: every string listed."""
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
    assert len(readme_blocks("python")) == 2 and len(readme_blocks("hocon")) == 2
    assert any("AGENT_LLM_OVERRIDE=" in c for c in commands)


def short_id(command: str) -> str:
    return re.sub(r"\s+", " ", command.split("#")[0]).strip()[:70]


@pytest.mark.parametrize("command", CLIENT_COMMANDS, ids=short_id)
def test_readme_command_works(live: ServerProcess, command: str) -> None:
    result = run_shell(rewrite_ports(command, live))
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}\n{live.log()[-2000:]}"
    for expected in expectations(command):
        assert expected in result.stdout, f"{command}: {expected!r} not in\n{result.stdout}"
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
    assert (first, second) == ("my name is Ada", "what did I say?")  # echo repeats each turn


def write_readme_files(root: Path) -> None:
    """The README's network, manifest and coded tool, at the paths their comments give."""
    blocks = readme_blocks("hocon") + [b for b in readme_blocks("python") if "CodedTool" in b]
    for block in blocks:
        match = re.match(r"# ([\w/.]+)", block)
        assert match, f"an example without its path comment:\n{block[:200]}"
        path = root / match.group(1)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            head, tail = block.split("\nclass ", 1)
            block = f"{head}\n{EVAL_ARITHMETIC}\nclass {tail}"
        path.write_text(block)
    (root / "registries" / "private").mkdir(exist_ok=True)
    (root / "registries" / "private" / "other.hocon").write_text(PRIVATE_OTHER)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readme")
    write_readme_files(root)
    return root


def test_readme_validate_command(written: Path) -> None:
    [command] = [c for c in all_commands() if is_validate(c)]
    result = run_shell(command, cwd=written)
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_network_and_coded_tool_serve_a_chat(written: Path) -> None:
    """The README's network on a second server, its gpt-4o swapped for the scripted model.

    Its front man lists ``/math_guy``, so the bundled manifest is served alongside (as
    the README's ``:``-joined manifests would) and that link is checked too.
    """
    # gpt-4o becomes the scripted model, told to call both tools the front man lists
    # (/math_guy is offered to the model as __math_guy; the script may name it math_guy).
    # The override reaches math_guy's own agent too, whose input is the arguments as a
    # JSON block, hence the literal expression, not {input}.
    calls = [{"tool": name, "args": {"expression": "6 * 7"}} for name in ("calculator", "math_guy")]
    override = {"class": "scripted", "calls": calls}
    env = {"AGENT_LLM_OVERRIDE": json.dumps(override), "AGENT_TOOL_PATH": str(written / "coded_tools")}
    extra = ["--manifest", str(BUNDLED_MANIFEST)]
    with start_server(manifest=written / "registries" / "manifest.hocon", env=env, extra_args=extra) as server:
        port = ["--port", str(server.grpc_port)]
        chat = run_shell(shlex.join(["neuro-san", "chat", "my_network", "-m", "6 * 7", "--maximal", *port]))
        assert chat.returncode == 0, chat.stderr + server.log()[-2000:]
        lines = [line.strip() for line in chat.stdout.splitlines()]
        assert 'front.calculator agent_progress: {"progress":0.5}' in lines  # the README's coded tool ran
        # Its answer, the bundled math_guy's through /math_guy, then the sly_data that
        # allow.to_upstream lets back to the client.
        assert [line for line in lines if line][-2:] == ["42; The answer is 42.", 'sly_data: {"equals":42}']
        links = run_shell(shlex.join(["neuro-san", "connectivity", "my_network", "--format", "json", *port]))
        assert links.returncode == 0, links.stderr
        nodes = {n["origin"]: n["display_as"] for n in json.loads(links.stdout)["connectivity_info"]}
        assert nodes == {"front": "llm_agent", "calculator": "coded_tool", "/math_guy": "external_agent"}
        listing = run_shell(shlex.join(["neuro-san", "list", *port]))
        assert "my_network" in listing.stdout and "private/other" not in listing.stdout  # public: false
