"""The client commands (``neuro-san chat | list | function | connectivity``) as a user runs
them: real processes against a real server."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import BUNDLED_MANIFEST, ROOT, ServerProcess, free_port, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

COUNTER = {
    "llm_config": {"class": "scripted"},
    "tools": [
        {
            "name": "counter",
            "function": {"description": "Says how many earlier turns it remembers."},
            "instructions": "Count.",
            "llm_config": {"class": "scripted", "reply": "after {history} turns: {input}"},
        }
    ],
}


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("cli")
    (root / "counter.json").write_text(json.dumps(COUNTER))
    (root / "manifest.json").write_text(json.dumps({"counter.json": True}))
    extra = ["--manifest", str(BUNDLED_MANIFEST)]
    with start_server(manifest=root / "manifest.json", http=True, extra_args=extra) as server:
        yield server


def neuro_san(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neuro_san.cli.main", *args],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, **(env or {})},
    )


def on(server: ServerProcess, transport: str) -> list[str]:
    if transport == "http":
        return ["--http", "--port", str(server.http_port)]
    return ["--port", str(server.grpc_port)]


TRANSPORTS = pytest.mark.parametrize("transport", ["grpc", "http"])


@TRANSPORTS
def test_one_shot_chat_prints_the_answer(cli_server: ServerProcess, transport: str) -> None:
    result = neuro_san("chat", "math_guy", "-m", "6 * 7", *on(cli_server, transport))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "The answer is 42."
    assert "\x1b[" not in result.stdout + result.stderr  # piped: no colours, no spinner


def test_one_shot_chat_reads_stdin_when_piped(cli_server: ServerProcess) -> None:
    result = neuro_san("chat", "deep/math_guy", "--sly-data", '{"k": 1}', *on(cli_server, "grpc"), stdin="2 ** 5\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("The answer is 32.\n")
    assert 'sly_data: {"equals":32}' in result.stdout


@TRANSPORTS
def test_json_prints_raw_messages(cli_server: ServerProcess, transport: str) -> None:
    minimal = neuro_san("chat", "echo", "-m", "hi", "--json", *on(cli_server, transport))
    assert minimal.returncode == 0, minimal.stderr
    [only] = [json.loads(line) for line in minimal.stdout.splitlines()]
    assert only["type"] == "AGENT_FRAMEWORK" and only["text"] == "hi"
    assert only["chat_context"]["chat_histories"][0]["messages"][0] == {
        "type": "HUMAN", "text": "hi", "origin": [{"tool": "echoer", "instantiation_index": 1}]
    }
    maximal = neuro_san("chat", "math_guy", "-m", "1+1", "--json", "--maximal", *on(cli_server, transport))
    messages = [json.loads(line) for line in maximal.stdout.splitlines()]
    assert [m["type"] for m in messages][:2] == ["SYSTEM", "HUMAN"]
    assert messages[-1]["type"] == "AGENT_FRAMEWORK" and messages[-1]["sly_data"] == {"equals": 2}
    accounting = [m for m in messages if m["type"] == "AGENT" and "text" not in m]
    assert accounting and isinstance(accounting[0]["structure"]["total_tokens"], int)


@TRANSPORTS
def test_stream_prints_the_answer_once_as_it_is_written(cli_server: ServerProcess, transport: str) -> None:
    streamed = neuro_san("chat", "counter", "-m", "hello big world", "--stream", *on(cli_server, transport))
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout == "after 0 turns: hello big world\n"
    raw = neuro_san("chat", "counter", "-m", "hello big world", "--stream", "--json", *on(cli_server, transport))
    messages = [json.loads(line) for line in raw.stdout.splitlines()]
    deltas, final = messages[:-1], messages[-1]
    # As many deltas as the client kept up with (waiting ones join): at least one.
    assert deltas and {m["type"] for m in deltas} == {"TOKEN_DELTA"} and final["type"] == "AGENT_FRAMEWORK"
    assert "".join(m["text"] for m in deltas) == final["text"] == "after 0 turns: hello big world"
    assert all(m["origin"] == [{"tool": "counter", "instantiation_index": 1}] for m in deltas)


@TRANSPORTS
def test_maximal_shows_thinking_by_origin(cli_server: ServerProcess, transport: str) -> None:
    result = neuro_san("chat", "math_guy", "-m", "2*(3+4)", "--maximal", *on(cli_server, transport))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("math_guy system: Use the calculator")
    assert "math_guy human: 2*(3+4)" in lines
    assert "  math_guy.calculator agent_progress: evaluating" in lines  # depth 2: indented once
    assert "math_guy agent_tool_result: 14" in lines
    assert lines[-2:] == ["The answer is 14.", 'sly_data: {"equals":14}']
    # What the structured messages say is on their line, not left out after a colon.
    assert 'math_guy agent: Invoking: `calculator` with: {"expression":"2*(3+4)"}' in lines
    assert '  math_guy.calculator agent: Received arguments: {"expression":"2*(3+4)"}' in lines
    assert "  math_guy.calculator agent: Got result: 14" in lines
    assert not [line for line in lines if line.endswith(":")], result.stdout
    # The usage, reported twice by the stream with the same numbers, is shown once, in words.
    [usage] = [line for line in lines if "token usage" in line]
    assert usage.startswith("math_guy agent: token usage (") and " LLM calls, " in usage


def test_interactive_chat_keeps_the_conversation(cli_server: ServerProcess) -> None:
    """On a terminal, a prompt loop: each turn carries the context; /quit leaves."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "neuro_san.cli.main", "chat", "counter", *on(cli_server, "grpc")],
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        os.write(controller, b"one\ntwo\n/reset\nthree\n/quit\n")
        out, err = process.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert process.returncode == 0, err
    answers = [line.split("> ")[-1] for line in out.splitlines() if "turns:" in line]
    assert answers == ["after 0 turns: one", "after 1 turns: two", "after 0 turns: three"]
    assert "chatting with counter" in err and "\x1b[" not in out + err


def test_interactive_chat_ends_on_eof(cli_server: ServerProcess) -> None:
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "neuro_san.cli.main", "chat", "echo", *on(cli_server, "grpc")],
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )
        os.write(controller, b"ping\n\x04")  # Ctrl-D at the start of a line: end of input
        out, err = process.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert process.returncode == 0, err
    assert "ping" in out


@TRANSPORTS
def test_list_and_function(cli_server: ServerProcess, transport: str) -> None:
    listing = neuro_san("list", *on(cli_server, transport))
    assert listing.returncode == 0, listing.stderr
    names = [line.split()[0] for line in listing.stdout.splitlines()]
    assert names == ["counter", "echo", "hello_world", "math_guy", "math_guy_passthrough"]
    as_json = json.loads(neuro_san("list", "--json", *on(cli_server, transport)).stdout)
    assert as_json["agents"][2]["description"].startswith("Announces a greeting")
    function = neuro_san("function", "math_guy", "--json", *on(cli_server, transport))
    assert json.loads(function.stdout)["function"]["parameters"]["required"] == ["expression"]
    plain = neuro_san("function", "hello_world", *on(cli_server, transport))
    assert plain.stdout.strip() == "hello_world: I announce greetings to the world."


@TRANSPORTS
def test_connectivity_in_each_format(cli_server: ServerProcess, transport: str) -> None:
    def draw(agent: str, fmt: str) -> str:
        result = neuro_san("connectivity", agent, "--format", fmt, *on(cli_server, transport))
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert draw("math_guy", "tree") == "math_guy (llm_agent)\n└── calculator (coded_tool)\n"
    assert draw("math_guy_passthrough", "tree") == "passthrough (llm_agent)\n└── /math_guy (external_agent)\n"
    assert draw("hello_world", "mermaid").splitlines() == [
        "flowchart TD", '    n0["announcer"]', '    n1["synonymizer"]', "    n0 --> n1",
    ]
    dot = draw("math_guy", "dot")
    assert dot.startswith('digraph "math_guy" {') and '"math_guy" -> "calculator";' in dot
    assert '"calculator" [shape=box];' in dot
    data = json.loads(draw("math_guy", "json"))
    assert [i["origin"] for i in data["connectivity_info"]] == ["math_guy", "calculator"]
    assert data["metadata"]["description"] == "Does arithmetic with a coded calculator."


@TRANSPORTS
def test_unknown_agent_exits_3_with_the_servers_message(cli_server: ServerProcess, transport: str) -> None:
    for command in (["chat", "no_such_agent", "-m", "hi"], ["function", "no_such_agent"]):
        result = neuro_san(*command, *on(cli_server, transport))
        assert result.returncode == 3
        assert "agent 'no_such_agent' is not served here" in result.stderr
        assert result.stdout == ""


@pytest.mark.parametrize("transport", ["--grpc", "--http"])
def test_unreachable_server_exits_4(transport: str) -> None:
    port = str(free_port())
    result = neuro_san("chat", "echo", "-m", "hi", transport, "--port", port)
    assert result.returncode == 4
    assert f"cannot reach the {'gRPC' if transport == '--grpc' else 'HTTP'} server" in result.stderr
    assert port in result.stderr


def test_usage_errors_exit_2() -> None:
    assert neuro_san("chat", "echo", "-m", "x", "--sly-data", "[1]").returncode == 2
    bad_json = neuro_san("chat", "echo", "-m", "x", "--sly-data", "{nope")
    assert bad_json.returncode == 2 and "--sly-data is not JSON" in bad_json.stderr
    assert neuro_san("chat").returncode == 2  # no AGENT
    assert neuro_san("connectivity", "x", "--format", "png").returncode == 2
    assert neuro_san("chat", "echo", "--grpc", "--http").returncode == 2
    assert neuro_san("chat", "echo", stdin="   \n").returncode == 2  # nothing to say


@pytest.mark.parametrize("command", ["chat", "list", "function", "connectivity"])
def test_help_on_each_command(command: str) -> None:
    result = neuro_san(command, "--help")
    assert result.returncode == 0
    assert f"usage: neuro-san {command}" in result.stdout
    assert "--http" in result.stdout and "exit status" in result.stdout
    assert "not found" not in result.stderr


def test_top_level_help_lists_the_client_commands() -> None:
    result = neuro_san("--help")
    for command in ("chat", "list", "function", "connectivity"):
        assert command in result.stdout


def test_client_commands_do_not_import_aiohttp_for_grpc(tmp_path: Path) -> None:
    """Lazy imports: the client side of gRPC needs neither aiohttp nor the gateway."""
    code = (
        "import sys; from neuro_san.client import AsyncAgentClient; "
        "from neuro_san.cli import client_commands, chat_command, render; "
        "AsyncAgentClient.grpc('127.0.0.1:1'); "
        "print(sorted(m for m in ('aiohttp', 'gateway', 'neuro_san.runtime') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.stdout.strip() == "[]", result.stderr


def _failing_networks(root: Path) -> Path:
    """One network whose LLM cannot be reached, one whose /name-style remote network cannot."""
    dead = free_port()
    no_llm = {"tools": [{"name": "front", "function": {"description": "d"}, "instructions": "i",
                         "llm_config": {"class": "openai", "model_name": "gpt-4o", "openai_api_key": "k",
                                        "openai_api_base": f"http://127.0.0.1:{dead}/v1", "max_attempts": 1}}]}
    no_peer = {"llm_config": {"class": "scripted"},
               "tools": [{"name": "front", "function": {"description": "d"}, "instructions": "i",
                          "tools": [f"grpc://127.0.0.1:{dead}/echo"]}]}
    (root / "no_llm.json").write_text(json.dumps(no_llm))
    (root / "no_peer.json").write_text(json.dumps(no_peer))
    (root / "manifest.json").write_text(json.dumps({"no_llm.json": True, "no_peer.json": True}))
    return root / "manifest.json"


def test_a_failing_llm_or_called_network_has_its_own_exit_code(tmp_path: Path) -> None:
    """The server answered: not 4 ("cannot be reached") but 6 (its LLM) or 7 (a network it called)."""
    with start_server(manifest=_failing_networks(tmp_path)) as server:
        llm = neuro_san("chat", "no_llm", "-m", "hi", *on(server, "grpc"))
        assert llm.returncode == 6, llm.stderr
        assert "connection to" in llm.stderr
        peer = neuro_san("chat", "no_peer", "-m", "hi", *on(server, "grpc"))
        assert peer.returncode == 7, peer.stdout + peer.stderr
    help_text = neuro_san("chat", "--help").stdout
    assert "6    the server answered, but its LLM provider failed" in help_text
    assert "7    the server answered, but a network it called failed" in help_text
