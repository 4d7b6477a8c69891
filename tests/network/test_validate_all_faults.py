"""``neuro-san validate`` reports every fault of every network in one run, and
``neuro-san serve`` refuses the same networks at load (issue 34, item 3).

One network file holds seven different faults; validate prints each on its own line
(file, key path, reason, agent) and exits 1; a real server started on the same manifest
logs each fault and does not serve that network, while the good one serves.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from neuro_san.client import AgentClient
from neuro_san.network.validate import main_validate
from tests.support.servers import start_server

pytestmark = pytest.mark.slow

GOOD = {"llm_config": {"class": "scripted"}, "tools": [{"name": "front", "instructions": "Say hi."}]}
#: Its only fault is a /name tool no manifest serves: refused by validate, served (with a
#: warning) by serve, where removing a network must not take down those that name it.
LINKED = {
    "llm_config": {"class": "scripted"},
    "tools": [{"name": "front", "instructions": "Hi.", "tools": ["/nowhere"]}],
}


def _faulty() -> dict[str, object]:
    described = {"description": "A tool."}
    return {
        "tools": [
            {
                "name": "front",
                "llm_config": {"class": "scripted"},
                "instructions": "Use your tools.",
                "tools": ["ghost", "/nowhere", "tool", "helper", "http://mcp.example:99999/mcp", "a2a+ftp://peer"],
            },
            {"name": "tool", "function": described, "class": "missing_module.Missing"},
            {
                "name": "helper",
                "llm_config": {"model_name": "gtp-4o"},
                "instructions": "Help.",
                "function": {**described, "parameters": {"type": "objekt", "properties": {}}},
            },
        ],
    }


#: (key path, what the reason says, agent) of each fault of the faulty network.
FAULTS = [
    ("tools[0].tools[0]", "unknown agent 'ghost'", "front"),
    ("tools[0].tools[4]", "not a valid URL", "front"),
    ("tools[0].tools[5]", "expected a2a+http(s)://host[:port]/path", "front"),
    ("tools[2].function.parameters.type", "unknown JSON Schema type 'objekt' (did you mean 'object'?)", "helper"),
    ("tools[2].llm_config", "closest known: 'gpt-4o'", "helper"),
    ("tools[1].class", "coded tool 'missing_module.Missing' not found: looked in", "tool"),
]
UNSERVED = ("tools[0].tools", "network '/nowhere' is not served by the manifests given", "front")


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    (tmp_path / "faulty.json").write_text(json.dumps(_faulty()))
    (tmp_path / "linked.json").write_text(json.dumps(LINKED))
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"good.json": True, "faulty.json": True, "linked.json": True}))
    return path


def test_validate_lists_every_fault_and_exits_non_zero(manifest: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main_validate([str(manifest)], out, err, tool_paths=[str(manifest.parent / "tools")]) == 1
    assert out.getvalue() == "OK good\n"
    lines = err.getvalue().splitlines()
    faulty = manifest.parent / "faulty.json"
    assert len(lines) == len(FAULTS) + 2, lines
    assert lines[-1] == (
        f"{manifest.parent / 'linked.json'}: tools[0].tools: network '/nowhere' is not served by the manifests "
        "given (list it there, served) (in agent 'front')"
    )
    for key_path, reason, agent in [*FAULTS, UNSERVED]:
        [line] = [line for line in lines if line.startswith(f"{faulty}: {key_path}: ")]
        assert reason in line and line.endswith(f"(in agent {agent!r})"), line
    # The paths searched for the coded tool are named, the --tool-path one first.
    assert str(manifest.parent / "tools" / "faulty" / "missing_module.py") in err.getvalue()


def test_serve_logs_each_fault_and_does_not_serve_the_network(manifest: Path) -> None:
    with start_server(manifest=manifest) as server:
        with AgentClient.grpc(server.grpc_target) as client:
            names = {agent.agent_name for agent in client.list()}
        log = server.log()
    assert names == {"good", "linked"}
    faulty = manifest.parent / "faulty.json"
    for key_path, reason, _ in FAULTS:
        [line] = [line for line in log.splitlines() if f"not serving: {faulty}: {key_path}: " in line]
        assert reason in line
    [warning] = [line for line in log.splitlines() if "'/nowhere' is not served" in line]
    assert "agent network linked:" in warning and "calls of that tool will fail" in warning
    assert "Traceback" not in log


def test_parameters_that_are_not_json_schema_are_faults_and_legacy_names_are_not() -> None:
    from neuro_san.network.parameters import parameters_faults

    legacy = {"type": "dict", "properties": {"n": {"type": "float"}, "x": {"type": "any"}}, "required": "n"}
    assert parameters_faults(legacy, "f.hocon", "tools[1].function.parameters") == []
    [fault] = parameters_faults(
        {"type": "object", "properties": {"n": {"type": "string", "minLength": "two"}}}, "f.hocon", "p"
    )
    assert str(fault) == "f.hocon: p.properties.n.minLength: not a valid JSON Schema: 'two' is not of type 'integer'"
