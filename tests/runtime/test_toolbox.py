"""Toolbox tools (``neuro_san.toolbox``): the default toolbox's get_current_date_time,
user toolbox files merged over the default, and the refusals at load."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from neuro_san.network.loader import load_network
from neuro_san.toolbox.resolve import TOOLBOX_ENV
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat

SHOUT = '''
from neuro_san.interfaces.coded_tool import CodedTool

class Shout(CodedTool):
    def invoke(self, args, sly_data):
        return args["prefix"] + str(args["words"]).upper()
'''
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d)")


def _network(llm_config: dict[str, Any], tool: dict[str, Any], **top: Any) -> dict[str, Any]:
    front = {"name": "clock", "instructions": "Use your tool.", "tools": [tool["name"]]}
    return {"llm_config": llm_config, **top, "tools": [front, tool]}


def _tool_results(fake: FakeLlmServer) -> list[str]:
    return [m["content"] for r in fake.requests for m in r.body["messages"] if m["role"] == "tool"]


def _offset(result: str) -> str:
    match = STAMP.fullmatch(result)
    assert match, result
    return match.group(2)


def test_get_current_date_time_with_pinned_args_wins_over_the_llm(tmp_path: Path) -> None:
    tool = {"name": "current_date_time", "toolbox": "get_current_date_time", "args": {"utc_offset": 0}}

    async def body(fake: FakeLlmServer) -> None:
        # A tool path that does not hold get_current_date_time (neuro-san 0.7.15 breaks here).
        host, factory = make_host({"clock": _network(fake.llm_config(), tool)}, [tmp_path])
        fake.enqueue(Reply.calls(FakeToolCall("current_date_time", {"utc_offset": 5})), Reply.answer("done"))
        messages = await run_chat(host, "clock", "what time is it?", maximal=True)
        offered = fake.requests[0].body["tools"][0]["function"]
        assert offered["name"] == "current_date_time"
        assert offered["description"].startswith("Get the current date and time for a specified timezone.")
        assert offered["parameters"]["properties"]["utc_offset"]["description"].startswith("The UTC offset in hours")
        [result] = _tool_results(fake)
        assert _offset(result) == "+00:00"
        stamp = datetime.fromisoformat(result)
        assert abs((stamp - datetime.now(UTC)).total_seconds()) < 60
        assert [m.text for m in messages if m.type == MessageType.AGENT_TOOL_RESULT] == [result]
        await factory.aclose()

    run_with_fake_llm(body)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"utc_offset": 5}, "+05:00"),
        ({"utc_offset": 99, "iana_timezone": "Asia/Kolkata"}, "+05:30"),
        ({"iana_timezone": None}, "+00:00"),
        ({"utc_offset": 30, "iana_timezone": "Mars/Olympus"}, "Error: Both timezone inputs are invalid."),
    ],
)
def test_get_current_date_time_takes_the_llms_arguments(arguments: dict[str, Any], expected: str) -> None:
    tool = {"name": "now", "toolbox": "get_current_date_time"}

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"clock": _network(fake.llm_config(), tool)})
        fake.enqueue(Reply.calls(FakeToolCall("now", arguments)), Reply.answer("done"))
        await run_chat(host, "clock", "time?")
        [result] = _tool_results(fake)
        assert result.startswith(expected) if expected.startswith("Error") else _offset(result) == expected
        await factory.aclose()

    run_with_fake_llm(body)


def _user_toolbox(tmp_path: Path, name: str = "toolbox.json") -> Path:
    (tmp_path / "clock").mkdir(exist_ok=True)
    (tmp_path / "clock" / "shout.py").write_text(SHOUT)
    path = tmp_path / name
    path.write_text(
        json.dumps(
            {
                "shouter": {
                    "class": "shout.Shout",
                    "description": "Shouts the words.",
                    "parameters": {"type": "object", "properties": {"words": {"type": "string"}}},
                    "args": {"prefix": ">>"},
                },
                "get_current_date_time": {"description": "What time is it?"},
                "lc_search": {"class": "langchain_community.tools.SomeSearch", "args": {"k": 3}},
            }
        )
    )
    return path


@pytest.mark.parametrize("how", ["network_key", "env"])
def test_user_toolbox_file_is_merged_over_the_default(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    toolbox = _user_toolbox(tmp_path)
    top: dict[str, Any] = {}
    if how == "env":
        monkeypatch.setenv(TOOLBOX_ENV, str(toolbox))
    else:
        top["toolbox_info_file"] = str(toolbox)
    shout = {"name": "loud", "toolbox": "shouter", "args": {"prefix": "##"}}

    async def body(fake: FakeLlmServer) -> None:
        network = _network(fake.llm_config(), shout, **top)
        network["tools"][0]["tools"].append("now")
        network["tools"].append({"name": "now", "toolbox": "get_current_date_time"})
        host, factory = make_host({"clock": network}, [tmp_path])
        fake.enqueue(Reply.calls(FakeToolCall("loud", {"words": "quiet", "prefix": "!!"})), Reply.answer("done"))
        await run_chat(host, "clock", "shout")
        offered = {t["function"]["name"]: t["function"] for t in fake.requests[0].body["tools"]}
        assert offered["loud"]["description"] == "Shouts the words."
        # Only the description was overridden: the default parameters are kept.
        assert offered["now"]["description"] == "What time is it?"
        assert set(offered["now"]["parameters"]["properties"]) == {"utc_offset", "iana_timezone"}
        # The agent's args beat the entry's, and both beat the LLM's.
        assert _tool_results(fake) == ["##QUIET"]
        await factory.aclose()

    run_with_fake_llm(body)


def _load(tools: list[dict[str, Any]], **top: Any) -> NetworkLoadError:
    document = {**top, "tools": [{"name": "front", "instructions": "x", "tools": [t["name"] for t in tools]}, *tools]}
    with pytest.raises(NetworkLoadError) as caught:
        build_network(document, "net.hocon", "net")
    return caught.value


def test_a_langchain_entry_is_refused_at_load_with_file_key_and_reason(tmp_path: Path) -> None:
    toolbox = _user_toolbox(tmp_path)
    error = _load([{"name": "search", "toolbox": "lc_search"}], toolbox_info_file=str(toolbox))
    assert (error.file, error.key_path) == ("net.hocon", "tools[1].toolbox")
    assert f"'lc_search' in {toolbox} names a LangChain tool" in error.reason


@pytest.mark.parametrize(
    ("tool", "key_path", "reason"),
    [
        ({"name": "t", "toolbox": "no_such_tool"}, "tools[1].toolbox", "'no_such_tool' is not defined in the default"),
        ({"name": "t", "toolbox": "requests_get"}, "tools[1].toolbox", "was removed from neuro-san's default"),
        ({"name": "t", "toolbox": 7}, "tools[1].toolbox", "must name a toolbox entry"),
        (
            {"name": "t", "toolbox": "get_current_date_time", "instructions": "hi"},
            "tools[1].instructions",
            "not allowed on a toolbox tool",
        ),
    ],
)
def test_bad_toolbox_agents_are_refused(tool: dict[str, Any], key_path: str, reason: str) -> None:
    error = _load([tool])
    assert error.key_path == key_path and reason in error.reason


def test_a_toolbox_front_man_and_bad_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(NetworkLoadError) as caught:
        build_network({"tools": [{"name": "t", "toolbox": "get_current_date_time"}]}, "n.hocon", "n")
    assert "front man" in caught.value.reason
    error = _load([{"name": "t", "toolbox": "get_current_date_time"}], toolbox_info_file=str(tmp_path / "none.hocon"))
    assert error.file == str(tmp_path / "none.hocon") and "cannot read" in error.reason
    error = _load([{"name": "t", "toolbox": "get_current_date_time"}], toolbox_info_file=["x"])
    assert error.key_path == "toolbox_info_file"


def test_the_toolbox_tool_is_a_coded_tool_in_connectivity() -> None:
    spec = build_network(
        {"tools": [{"name": "f", "instructions": "x", "tools": ["now"]},
                   {"name": "now", "toolbox": "get_current_date_time", "display_as": "clock"}]},  # fmt: skip
        "n.hocon",
        "n",
    )
    now = spec.agents["now"]
    assert now.kind == "coded_tool" and now.display_as == "clock"
    assert now.class_name == "neuro_san.toolbox.get_current_date_time.GetCurrentDateTime"


#: A coded tool of an installed package, as neuro-san-studio 0.4.3 ships its own: its
#: toolbox file names ``neuro_san_studio.coded_tools.<module>.<Class>``, and the module
#: imports third-party packages (``ddgs``, ``bs4``…) at its top.
PACKAGED_SEARCH = '''
import absent_third_party_search_lib

from neuro_san.interfaces.coded_tool import CodedTool

class Search(CodedTool):
    def invoke(self, args, sly_data):
        return "found"
'''


def _packaged_toolbox(tmp_path: Path, package: str) -> tuple[Path, Path]:
    """A network whose toolbox entry names ``<package>.coded_tools.search.Search``, and
    a folder holding that package (to put on ``sys.path``, as an installed package is)."""
    site = tmp_path / "site"
    tools = site / package / "coded_tools"
    tools.mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (tools / "__init__.py").write_text("")
    (tools / "search.py").write_text(PACKAGED_SEARCH)
    toolbox = tmp_path / "toolbox_info.json"
    entry = {"class": f"{package}.coded_tools.search.Search", "description": "Searches.",
             "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}  # fmt: skip
    toolbox.write_text(json.dumps({"search": entry}))
    network = tmp_path / "finder.json"
    front = {"name": "front", "instructions": "Search.", "tools": ["search"]}
    tools = [front, {"name": "search", "toolbox": "search"}]
    network.write_text(json.dumps({"toolbox_info_file": str(toolbox), "tools": tools}))
    return network, site


def test_a_toolbox_class_of_a_package_not_installed_is_refused_naming_the_package(tmp_path: Path) -> None:
    package = "packaged_tools_not_installed"
    network, _ = _packaged_toolbox(tmp_path, package)
    with pytest.raises(NetworkLoadError) as caught:
        load_network(network, "finder", tool_roots=[tmp_path / "coded_tools"])
    assert caught.value.key_path == "tools[1].class"
    assert f"the package {package!r} is not installed in this server's environment" in caught.value.reason


def test_a_toolbox_class_of_an_installed_package_loads_and_a_failing_import_answers_at_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading finds the module without importing it; its missing import is the call's answer."""
    package = "packaged_tools_installed"
    network, site = _packaged_toolbox(tmp_path, package)
    monkeypatch.syspath_prepend(str(site))
    spec = load_network(network, "finder", tool_roots=[tmp_path / "coded_tools"])
    assert spec.agents["search"].class_name == f"{package}.coded_tools.search.Search"

    async def body(fake: FakeLlmServer) -> None:
        document = {**json.loads(network.read_text()), "llm_config": fake.llm_config()}
        host, factory = make_host({"finder": document}, [tmp_path / "coded_tools"])
        fake.enqueue(Reply.calls(FakeToolCall("search", {"query": "q"})), Reply.answer("done"))
        await run_chat(host, "finder", "find")
        [result] = _tool_results(fake)
        assert result.startswith(f"Error: coded tool module {package}.coded_tools.search cannot be loaded")
        assert "it imports 'absent_third_party_search_lib', which is not installed" in result
        await factory.aclose()

    run_with_fake_llm(body)
