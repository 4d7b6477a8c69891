"""Loading network files: every format, commondefs, and each error with its file, key
path and reason."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.network.loader import NetworkLoadError, load_network

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "networks"


def _network(**front_extra: Any) -> dict[str, Any]:
    """A small valid network: front man 'boss' calling 'helper'."""
    return {
        "llm_config": {"class": "scripted"},
        "tools": [
            {"name": "boss", "instructions": "Lead.", "tools": ["helper"], **front_extra},
            {"name": "helper", "function": {"description": "Helps."}, "instructions": "Help."},
        ],
    }


def _write(tmp_path: Path, document: Any, name: str = "net.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _load_error(tmp_path: Path, document: Any) -> NetworkLoadError:
    path = _write(tmp_path, document)
    with pytest.raises(NetworkLoadError) as caught:
        load_network(path, "net")
    return caught.value


# Formats -------------------------------------------------------------------------------


def test_hocon_features_and_commondefs() -> None:
    spec = load_network(FIXTURES / "hello_world.hocon", "hello_world")
    assert spec.name == "hello_world"
    assert spec.front_man == "announcer"
    assert list(spec.agents) == ["announcer", "synonymizer"]
    front = spec.front
    # replacement_strings, applied until stable; unknown {short} and JSON braces untouched
    assert front.instructions == (
        'You are a friendly announcer. Say Hello.\nKeep it {short} and use JSON like {"a": 1}.'
    )
    # ${...} substitution and object concatenation, then the agent's overlay
    assert dict(front.llm_config) == {
        "class": "scripted",
        "temperature": 0.1,
        "model_name": "hello-model",
    }
    helper = spec.agents["synonymizer"]
    assert dict(helper.llm_config)["temperature"] == 0.5
    # replacement_values: the bare key became the whole dict, then got its strings
    assert helper.description == "Finds synonyms of a word for a friendly announcer."
    assert helper.parameters is not None and helper.parameters["required"] == ["word"]
    assert helper.command == "Answer briefly."
    assert helper.max_iterations == 3
    assert helper.metadata == {"owner": "tests"}
    assert front.tools == ("synonymizer", "/other_network", "http://localhost:8080/remote")
    assert spec.external_refs() == {"/other_network", "http://localhost:8080/remote"}
    assert front.max_message_history == 10
    assert front.structure_formats == ("json",)
    assert front.display_as == "front"
    assert front.kind == "llm_agent"


def test_hocon_allow_rules() -> None:
    allow = load_network(FIXTURES / "hello_world.hocon", "hello_world").front.allow
    assert dict(allow.to_upstream.keys) == {"user_id": "user_id", "locale": "locale"}
    assert dict(allow.to_downstream.keys) == {"user_id": "user_id", "locale": "lang"}
    assert allow.to_downstream.apply({"user_id": 1, "secret": 2, "locale": "fr"}) == {
        "user_id": 1,
        "lang": "fr",
    }
    assert dict(allow.from_downstream.keys) == {"answer": "answer"}
    assert allow.from_downstream_messages is True
    assert allow.connectivity is False


def test_hocon_limits_metadata_and_global_sly_data_schema() -> None:
    spec = load_network(FIXTURES / "hello_world.hocon", "hello_world", public=False)
    assert spec.public is False
    assert spec.max_iterations == 7  # from max_steps
    assert spec.max_execution_seconds == 60.0
    assert spec.request_timeout_seconds == 90.5
    assert spec.max_attempts == 2
    assert spec.metadata == {"description": "Says hello", "tags": ["demo"]}
    assert spec.source == str(FIXTURES / "hello_world.hocon")
    schema = spec.front.function["sly_data_schema"]
    assert schema == {
        "type": "object",
        "properties": {"user_id": {"type": "string"}, "locale": {"type": "string"}},
    }
    assert spec.extra["verbose"] is True


def test_yaml_network_with_coded_tool() -> None:
    spec = load_network(FIXTURES / "music_nerd.yaml", "music_nerd")
    assert spec.front_man == "MusicNerd"
    accountant = spec.agents["Accountant"]
    assert accountant.kind == "coded_tool"
    assert accountant.class_name == "accounting.Accountant"
    assert dict(accountant.args) == {"rate": 2}
    assert dict(accountant.allow.to_upstream.keys) == {"running_cost": "running_cost"}
    assert spec.front.structure_formats == ("json", "xml")
    assert spec.max_iterations == 20  # the default


def test_json_network_front_man_without_function() -> None:
    spec = load_network(FIXTURES / "calculator.json", "calculator")
    assert spec.front.function == {}
    assert spec.max_iterations == 4
    assert spec.agents["adder"].class_name == "math_tools.adder.Adder"


def test_yml_extension(tmp_path: Path) -> None:
    path = tmp_path / "net.yml"
    path.write_text("tools:\n  - name: solo\n    instructions: Hi.\n", encoding="utf-8")
    assert load_network(path, "net").front_man == "solo"


def test_max_iterations_wins_over_max_steps(tmp_path: Path) -> None:
    document = {**_network(), "max_iterations": 5, "max_steps": 9}
    assert load_network(_write(tmp_path, document), "net").max_iterations == 5


def test_error_is_a_configuration_error(tmp_path: Path) -> None:
    error = _load_error(tmp_path, {"tools": []})
    assert isinstance(error, ConfigurationError)
    assert error.file == str(tmp_path / "net.json")
    assert error.key_path == "tools"


# commondefs ----------------------------------------------------------------------------


def test_commondefs_replacement_value_in_list_and_chained_strings(tmp_path: Path) -> None:
    document = _network()
    document["commondefs"] = {
        "replacement_strings": {"a": "{b}!", "b": "{c}", "c": "deep"},
        "replacement_values": {"helpers": ["helper"], "fn": {"description": "Does {a}"}},
    }
    document["tools"][0]["tools"] = "helpers"
    document["tools"][1]["function"] = "fn"
    spec = load_network(_write(tmp_path, document), "net")
    assert spec.front.tools == ("helper",)
    assert spec.agents["helper"].description == "Does deep!"


def test_commondefs_self_growing_definition_is_refused(tmp_path: Path) -> None:
    document = _network(instructions="{a}")
    document["commondefs"] = {"replacement_strings": {"a": "x{a}"}}
    error = _load_error(tmp_path, document)
    assert error.key_path == "commondefs.replacement_strings"
    assert "still change after" in error.reason


# Errors --------------------------------------------------------------------------------


def _mutated(path: list[Any], value: Any) -> dict[str, Any]:
    """A copy of the small network with the value at ``path`` set (None deletes)."""
    document = copy.deepcopy(_network())
    target: Any = document
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


ERROR_CASES = [
    (
        _mutated(["tools", 0, "tools"], ["helper", "foo"]),
        "tools[0].tools[1]",
        "unknown agent 'foo'",
    ),
    (
        _mutated(["tools", 0, "class"], "pkg.Boss"),
        "tools[0].class",
        "the front man (first agent) cannot be a coded tool: it must not have 'class'",
    ),
    (_mutated(["tools", 1, "name"], None), "tools[1]", "missing 'name'"),
    (
        _mutated(["tools", 1, "name"], "my.helper"),
        "tools[1].name",
        "invalid agent name 'my.helper': use letters, digits, '-' and '_' only",
    ),
    (
        _mutated(["tools", 1, "name"], "two words"),
        "tools[1].name",
        "invalid agent name 'two words': use letters, digits, '-' and '_' only",
    ),
    (_mutated(["tools", 1, "name"], "boss"), "tools[1].name", "duplicate agent name 'boss'"),
    (
        _mutated(["tools", 1, "class"], "Accountant"),
        "tools[1].class",
        "must look like 'module.Class', not 'Accountant'",
    ),
    (
        _mutated(["tools", 1, "class"], "pkg.1bad"),
        "tools[1].class",
        "must look like 'module.Class', not 'pkg.1bad'",
    ),
    (
        _mutated(["tools", 1, "toolbox"], 7),
        "tools[1].toolbox",
        "must name a toolbox entry, not 7",
    ),
    (
        _mutated(["tools", 1, "function"], None),
        "tools[1].function",
        "missing: an agent that others call needs a function",
    ),
    (
        _mutated(["tools", 1, "function"], {"parameters": {}}),
        "tools[1].function.description",
        "missing: the caller's LLM needs it",
    ),
    (
        _mutated(["tools", 1, "function"], "unknown_value"),
        "tools[1].function",
        "must be a dict, not string",
    ),
    (
        _mutated(["tools", 1, "function"], {"description": 3}),
        "tools[1].function.description",
        "must be a string, not int",
    ),
    (
        _mutated(["tools", 1, "function"], {"description": "d", "parameters": []}),
        "tools[1].function.parameters",
        "must be a dict, not list",
    ),
    (
        _mutated(["tools", 0, "instructions"], ["a"]),
        "tools[0].instructions",
        "must be a string, not list",
    ),
    (_mutated(["tools", 1, "command"], 5), "tools[1].command", "must be a string, not int"),
    (
        _mutated(["tools", 0, "llm_config"], "gpt"),
        "tools[0].llm_config",
        "must be a dict, not string",
    ),
    (_mutated(["llm_config"], ["gpt"]), "llm_config", "must be a dict, not list"),
    (
        _mutated(["tools", 0, "max_message_history"], "10"),
        "tools[0].max_message_history",
        "must be an integer, not string",
    ),
    (
        _mutated(["tools", 0, "structure_formats"], 3),
        "tools[0].structure_formats",
        "must be a string or a list of strings, not 3",
    ),
    (
        _mutated(["tools", 0, "tools"], [{"url": "ftp://mcp.example/mcp"}]),
        "tools[0].tools[0].url",
        "'ftp://mcp.example/mcp': MCP servers are reached over streamable HTTP; use an http:// or https:// URL",
    ),
    (
        _mutated(["tools", 0, "tools"], "helper"),
        "tools[0].tools",
        "must be a list of agent names, not string",
    ),
    (_mutated(["tools"], []), "tools", "must be a non-empty list of agents, the front man first"),
    (_mutated(["tools"], None), "tools", "missing: list the agents, the front man first"),
    (_mutated(["tools", 1], "helper"), "tools[1]", "an agent must be a dict, not string"),
    (_mutated(["max_steps"], "ten"), "max_steps", "must be an integer, not string"),
    (_mutated(["max_iterations"], 0), "max_iterations", "must be at least 1, not 0"),
    (
        _mutated(["max_execution_seconds"], -1),
        "max_execution_seconds",
        "must not be negative, not -1",
    ),
    (
        _mutated(["request_timeout_seconds"], True),
        "request_timeout_seconds",
        "must be a number of seconds, not bool",
    ),
    (_mutated(["max_attempts"], 0), "max_attempts", "must be at least 1, not 0"),
    (
        _mutated(["tools", 1, "max_steps"], 1.5),
        "tools[1].max_steps",
        "must be an integer, not float",
    ),
    (_mutated(["metadata"], "x"), "metadata", "must be a dict, not string"),
    (_mutated(["sly_data_schema"], []), "sly_data_schema", "must be a dict, not list"),
    (
        _mutated(["commondefs"], {"replacement_strings": {"a": ["x"]}}),
        "commondefs.replacement_strings.a",
        "must be a string, not list",
    ),
    (_mutated(["tools", 0, "allow"], "all"), "tools[0].allow", "must be a dict, not string"),
    (
        _mutated(["tools", 0, "allow"], {"to_upstream": {"sly_data": "user_id"}}),
        "tools[0].allow.to_upstream.sly_data",
        "must be a list of keys or a dict, not string",
    ),
    (
        _mutated(["tools", 0, "allow"], {"to_downstream": {"sly_data": {"k": 1}}}),
        "tools[0].allow.to_downstream.sly_data.k",
        "must be true, false or the key's new name, not 1",
    ),
    (
        _mutated(["tools", 0, "allow"], {"from_downstream": {"sly_data": [1]}}),
        "tools[0].allow.from_downstream.sly_data[0]",
        "must be a sly_data key name, not 1",
    ),
    (
        _mutated(["tools", 0, "allow"], {"from_downstream": {"messages": 1}}),
        "tools[0].allow.from_downstream.messages",
        "must be a bool, string, list or dict, not int",
    ),
    (
        _mutated(["tools", 0, "allow"], {"connectivity": "no"}),
        "tools[0].allow.connectivity",
        "must be true or false, not 'no'",
    ),
]


@pytest.mark.parametrize(("document", "key_path", "reason"), ERROR_CASES)
def test_error_names_file_key_path_and_reason(
    tmp_path: Path, document: dict[str, Any], key_path: str, reason: str
) -> None:
    error = _load_error(tmp_path, document)
    assert (error.key_path, error.reason) == (key_path, reason)
    assert str(error) == f"{tmp_path / 'net.json'}: {key_path}: {reason}"


def test_front_man_is_lenient_about_function(tmp_path: Path) -> None:
    document = _mutated(["tools", 0, "function"], {"parameters": {"type": "object"}})
    spec = load_network(_write(tmp_path, document), "net")
    assert spec.front.description == ""


def test_uncalled_agent_may_omit_function(tmp_path: Path) -> None:
    document = _network()
    document["tools"].append({"name": "spare", "instructions": "Unused."})
    assert "spare" in load_network(_write(tmp_path, document), "net").agents


def test_messages_flag_accepts_refs_and_empty_values(tmp_path: Path) -> None:
    for value, expected in ((["/a"], True), ({"/a": True}, True), ("", False), (False, False)):
        document = _network(allow={"from_downstream": {"messages": value}})
        spec = load_network(_write(tmp_path, document), "net")
        assert spec.front.allow.from_downstream_messages is expected, value


def test_unknown_keys_are_accepted(tmp_path: Path) -> None:
    # Keys that change nothing observable (verbose: server-side logging) or that neuro-san
    # does not know either are accepted; the ones that change behaviour are implemented or
    # refused (tests/system/test_upstream_keys.py, tests/runtime/test_middleware.py).
    document = _network(verbose="extra")
    document["my_own_note"] = "kept"
    spec = load_network(_write(tmp_path, document), "net")
    assert spec.extra["my_own_note"] == "kept"


# Syntax errors and unreadable files ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("bad.hocon", "{\n  tools = [\n    { name = a }\n  llm_config = }\n", 4),
        ("bad.yaml", "tools:\n  - name: a\n    tools: [b,\n  oops: }\n", 4),
        ("bad.json", '{\n  "tools": [\n    {"name": "a",}\n  ]\n}\n', 3),
    ],
)
def test_syntax_error_gives_file_and_line(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NetworkLoadError) as caught:
        load_network(path, "bad")
    error = caught.value
    assert error.line == line
    assert str(error).startswith(f"{path}: line {line}: syntax error: ")


def test_unresolved_hocon_substitution(tmp_path: Path) -> None:
    path = tmp_path / "net.hocon"
    path.write_text("tools = [{name = a, instructions = ${nowhere}}]\n", encoding="utf-8")
    with pytest.raises(NetworkLoadError) as caught:
        load_network(path, "net")
    assert "nowhere" in caught.value.reason
    assert caught.value.file == str(path)


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(NetworkLoadError, match="cannot read file"):
        load_network(tmp_path / "absent.hocon", "absent")
    other = tmp_path / "net.txt"
    other.write_text("{}", encoding="utf-8")
    with pytest.raises(NetworkLoadError, match="unsupported file type '.txt'"):
        load_network(other, "net")


@pytest.mark.parametrize(("text", "kind"), [("", "empty"), ("[1, 2]", "a list")])
def test_top_level_must_be_a_dict(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "net.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NetworkLoadError) as caught:
        load_network(path, "net")
    assert caught.value.reason == f"the top level must be a dict, but the file is {kind}"
