"""The network keys studio's networks use that neuro-san 0.7 honours: ``error_formatter``
(``string`` / ``json``) with ``error_fragments``, a ``null`` in an ``allow`` list (an unset
``${?llm_config_key}``), Connectivity of a coded tool's ``args.tools`` and of an MCP URL
without a path, and LangChain toolbox toolkits still refused with the reason."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from neuro_san.network.files import read_document
from tests.support.runtime import make_host, run_chat


def _error_network(**top: Any) -> dict[str, Any]:
    return {
        "llm_config": {"class": "scripted", "reply": "Error: the thing broke"},
        **top,
        "tools": [
            {"name": "front", "instructions": "Lead.", "tools": ["helper"]},
            {
                "name": "helper",
                "function": {"description": "Helps.", "parameters": {"type": "object", "properties": {}}},
                "instructions": "Help.",
            },
        ],
    }


def _final(document: dict[str, Any], text: str = "hi") -> tuple[str, list[str]]:
    host, _ = make_host({"net": document})
    messages = asyncio.run(run_chat(host, "net", text, maximal=True))
    ai = [m.text for m in messages if m.type == MessageType.AI]
    return messages[-1].text, ai


def test_json_error_formatter_wraps_answers_holding_a_fragment() -> None:
    final, ai = _final(_error_network(error_formatter="json", error_fragments=["Error:"]))
    # The helper's answer and the front man's both hold "Error:"; each is wrapped with its origin.
    helper = json.loads(ai[0].removeprefix("```json\n").removesuffix("\n```"))
    assert helper == {"error": "Error: the thing broke", "tool": "front.helper"}
    assert ai[0] == "```json\n" + json.dumps(helper, sort_keys=True, indent=4) + "\n```"
    front = json.loads(final.removeprefix("```json\n").removesuffix("\n```"))
    assert front["tool"] == "front"


def test_string_error_formatter_and_no_fragment_leaves_the_answer() -> None:
    final, _ = _final(_error_network(error_fragments=["Error:"]))
    assert final.startswith("Error from front: ")
    final, _ = _final(_error_network())  # no fragments: "Error:" is just text
    assert final == "Error: the thing broke"


def test_agent_level_fragments_override_the_network() -> None:
    document = _error_network(error_formatter="json", error_fragments=["nothing matches this"])
    document["tools"][0]["error_fragments"] = ["Error:"]
    document["tools"][0]["error_formatter"] = "string"
    final, ai = _final(document)
    assert ai[0] == "Error: the thing broke"  # the helper keeps the network's fragments
    assert final.startswith("Error from front: ")


def test_bad_error_formatter_is_refused() -> None:
    with pytest.raises(NetworkLoadError, match="error_formatter must be 'string' or 'json'"):
        build_network(_error_network(error_formatter="xml"), "<net>", "net")


def test_null_in_an_allow_list_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "net.hocon"
    path.write_text(
        """{
          "llm_config": {"class": "scripted"},
          "tools": [{"name": "front", "instructions": "x",
                     "allow": {"to_upstream": {"sly_data": ["kept", ${?llm_config_key}]}}}]
        }"""
    )
    document = read_document(path)
    assert document["tools"][0]["allow"]["to_upstream"]["sly_data"] == ["kept", None]
    spec = build_network(document, str(path), "net")
    assert dict(spec.front.allow.to_upstream.keys) == {"kept": "kept"}


def _connectivity_network() -> dict[str, Any]:
    return {
        "llm_config": {"class": "scripted"},
        "tools": [
            {"name": "front", "instructions": "x", "tools": ["solver", "https://mcp.example.com", "https://x.io/mcp"]},
            {
                "name": "solver",
                "function": {"description": "Solves."},
                "class": "solver.Solver",
                "args": {"tools": {"decompose": "decomposer", "vote": "voter"}, "other": 1},
            },
            {"name": "decomposer", "function": {"description": "d"}, "instructions": "x"},
            {"name": "voter", "function": {"description": "v"}, "instructions": "x", "tools": ["ghost_listed"]},
        ],
    }


def test_connectivity_lists_args_tools_and_skips_path_less_urls() -> None:
    document = _connectivity_network()
    document["tools"][3]["tools"] = []
    document["tools"][1]["args"]["tools"]["ghost"] = "not_an_agent"
    host, _ = make_host({"net": document})
    entries, _ = host.connectivity("net")
    got = [(e.origin, list(e.tools), e.display_as) for e in entries]
    assert got == [
        ("front", ["solver", "https://mcp.example.com", "https://x.io/mcp"], "llm_agent"),
        ("solver", ["decomposer", "voter", "not_an_agent"], "coded_tool"),
        ("decomposer", [], "llm_agent"),
        ("voter", [], "llm_agent"),
        # https://mcp.example.com has no path: neuro-san reads no agent from it, no node.
        ("https://x.io/mcp", [], "external_agent"),
    ]


def test_langchain_toolkit_in_the_toolbox_is_refused_with_the_reason(tmp_path: Path) -> None:
    toolbox = tmp_path / "toolbox_info.hocon"
    toolbox.write_text('{"my_toolkit": {"class": "langchain_community.agent_toolkits.FileManagementToolkit"}}')
    document = {
        "llm_config": {"class": "scripted"},
        "toolbox_info_file": str(toolbox),
        "tools": [
            {"name": "front", "instructions": "x", "tools": ["files"]},
            {"name": "files", "toolbox": "my_toolkit"},
        ],
    }
    with pytest.raises(NetworkLoadError) as caught:
        build_network(document, "<net>", "net")
    assert "LangChain tool or toolkit" in str(caught.value)
    assert "tools[1].toolbox" in str(caught.value)
