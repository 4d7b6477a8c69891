"""The settings registry (issue 35, item 2): every setting declared once and read only through
it, one grammar, malformed values named, unknown ``AGENT_*`` names matched to the closest, and
the README kept in step with the registry. In-process; the commands are tests/cli's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from neuro_san.settings import Settings, activate, catalog, current, snapshot
from neuro_san.settings.readme import BEGIN, in_hand_table, rewritten
from tests.support.servers import ROOT

#: The only modules that may read ``os.environ`` / ``os.getenv``, each with why.
ENVIRONMENT_READERS = {
    "neuro_san/settings/registry.py": "the registry: the snapshot the CLI takes at start, or a live view for "
    "library use and tests",
}
#: ``AGENT_*`` strings in the code that name no setting.
NOT_SETTINGS = {"AGENT_NOT_FOUND", "AGENT_PROGRESS", "AGENT_FRAMEWORK", "AGENT_TOOL_RESULT"}


def _sources() -> list[Path]:
    return sorted(p for folder in ("neuro_san", "gateway") for p in (ROOT / folder).rglob("*.py")
                  if "generated" not in p.parts and not p.name.endswith(("_pb2.py", "_pb2_grpc.py")))


def _environment_reads(path: Path) -> list[int]:
    """Lines of ``path`` that read the process environment directly."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
                and node.attr in ("environ", "environb", "getenv", "getenvb")):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                alias.name in ("environ", "environb", "getenv", "getenvb") for alias in node.names):
            lines.append(node.lineno)
    return lines


def test_only_the_registry_reads_the_environment() -> None:
    readers = {str(p.relative_to(ROOT)): lines for p in _sources() if (lines := _environment_reads(p))}
    stray = {path: lines for path, lines in readers.items() if path not in ENVIRONMENT_READERS}
    assert not stray, f"read settings through neuro_san.settings (current() / process_env()), not os.environ: {stray}"
    assert set(ENVIRONMENT_READERS) <= set(readers), "an allowed reader no longer reads: drop it from the list"


def test_every_setting_the_code_names_is_declared() -> None:
    named = {name for p in _sources() for name in re.findall(r"[\"'](AGENT_[A-Z0-9_]+)[\"']", p.read_text())}
    undeclared = sorted(named - NOT_SETTINGS - set(catalog()))
    assert not undeclared, f"declare these in neuro_san/settings/catalog_*.py: {undeclared}"


def _hand_table_names() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## Configuration", 1)[1].split(BEGIN, 1)[0]
    names: set[str] = set()
    for row in (line for line in table.splitlines() if line.startswith("| `")):
        names.update(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`", row.split("|")[1]))
    return names


def test_the_readme_table_and_the_registry_agree() -> None:
    names = _hand_table_names()
    assert not sorted(names - set(catalog())), "the README documents settings the registry does not declare"
    expected = {name for name, declared in catalog().items() if in_hand_table(declared)}
    assert not sorted(expected - names), "settings the README's configuration table does not document"


def test_the_readme_generated_table_is_current() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert rewritten(text) == text, "run python -m neuro_san.settings.readme"


@pytest.mark.parametrize(("name", "value", "accepts"), [
    ("AGENT_MCP_ENABLE", "ture", "not a switch"),
    ("AGENT_SERVICE_LOG_JSON", "maybe", "not a switch"),
    ("AGENT_NETWORK_DESIGNER_DEMO_MODE", "yes please", "not a switch"),
    ("AGENT_HTTP_PORT", "abc", "'abc' is not a number"),
    ("AGENT_PORT", "70000", "not a port"),
    ("AGENT_GRPC_KEEPALIVE_SECONDS", "-1", "'-1' must not be negative"),
    ("AGENT_EVENT_LOOP", "fast", "one of auto, uvloop, asyncio"),
    ("AGENT_WORKERS", "0", "'auto'"),
    ("AGENT_LLM_OVERRIDE", "[1]", "a JSON object"),
    ("AGENT_TRACING", "jaeger", "not a switch"),
])
def test_a_malformed_value_is_one_line_naming_the_variable(name: str, value: str, accepts: str) -> None:
    [problem] = Settings({name: value}).problems()
    assert problem.startswith(name) and accepts in problem, problem


def test_one_grammar_for_switches() -> None:
    values = [Settings({"AGENT_MCP_ENABLE": text}).value("AGENT_MCP_ENABLE") for text in ("on", "0", "YES", "")]
    assert values == [True, False, True, True]
    assert Settings({"AGENT_NETWORK_DESIGNER_USE_RESERVATIONS": "1"}).value("AGENT_NETWORK_DESIGNER_USE_RESERVATIONS")


def test_an_unknown_agent_variable_gets_the_closest_known_name() -> None:
    settings = Settings({"AGENT_HTTP_PROT": "1", "AGENT_ZZZ": "1", "AGENT_PORT": "1", "HOME": "/"})
    assert settings.unknown() == [("AGENT_HTTP_PROT", "AGENT_HTTP_PORT"), ("AGENT_ZZZ", None)]


def test_the_snapshot_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_SERVER_NAME", "before")
    with activate(snapshot()):
        monkeypatch.setenv("AGENT_SERVER_NAME", "after")
        assert current().value("AGENT_SERVER_NAME") == "before"
    assert current().value("AGENT_SERVER_NAME") == "after"  # outside a command: a live view


