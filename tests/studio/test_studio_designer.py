"""neuro-san-studio's Agent Network Designer, native: a fake LLM (real HTTP, OpenAI wire
format) defines a network through a coded tool that writes ``agent_network_definition``
into sly_data, as the designer's editor tools do; the definition middleware shows it to the
model, the persistence middleware sends the model back once with the validation errors,
then writes the network to a temporary project's ``registries/generated``, and the
registry's reload serves it (a real chat on the written file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from neuro_san.network.registry import NetworkRegistry
from neuro_san.runtime.coded_tools import CodedToolResolver
from neuro_san.runtime.network_runner import NetworkRunner
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat

DEFINITION = "middleware.agent_network_designer.agent_network_definition_middleware.AgentNetworkDefinitionMiddleware"
PERSISTENCE = (
    "middleware.agent_network_designer.persistence.agent_network_persistence_middleware."
    "AgentNetworkPersistenceMiddleware"
)
DEFINER = """
import json
from neuro_san.interfaces.coded_tool import CodedTool


class Definer(CodedTool):
    async def async_invoke(self, args, sly_data):
        sly_data["agent_network_definition"] = json.loads(args["definition"])
        return "stored"
"""
# The project's own AAOSA substitutions (what studio's registries/aaosa.hocon provides).
AAOSA = """
aaosa_call = {"parameters": {"type": "object", "properties": {"inquiry": {"type": "string"}}, "required": ["inquiry"]}}
aaosa_instructions = "Delegate to your tools when they can help."
"""


def _designer(fake: FakeLlmServer) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"definition": {"type": "string"}}, "required": ["definition"]}
    return {
        "llm_config": fake.llm_config(),
        "tools": [
            {
                "name": "designer",
                "instructions": "Design agent networks.",
                "tools": ["set_definition"],
                "allow": {
                    "to_upstream": {
                        "sly_data": [
                            "agent_network_definition",
                            "agent_network_hocon_text",
                            "agent_network_metadata",
                            "agent_network_name",
                            "agent_reservations",
                        ]
                    }
                },  # fmt: skip
                "middleware": [
                    {"class": DEFINITION, "args": {"progress_reporter": True, "sly_data": True}},
                    {
                        "class": PERSISTENCE,
                        "allow": {"reservations": True},
                        "args": {"reservationist": True, "sly_data": True},
                    },
                ],
            },
            {
                "name": "set_definition",
                "function": {"description": "d", "parameters": parameters},
                "class": "definer.Definer",
            },  # fmt: skip
        ],
    }


def _define(network: dict[str, Any], call_id: str) -> Reply:
    return Reply.calls(FakeToolCall("set_definition", {"definition": json.dumps(network)}, call_id))


def _project(root: Path, fake: FakeLlmServer) -> Path:
    """A studio project as ``ns init`` lays it out (the parts the generated file needs)."""
    (root / "coded").mkdir(parents=True)
    (root / "coded" / "definer.py").write_text(DEFINER)
    (root / "registries" / "generated").mkdir(parents=True)
    (root / "registries" / "aaosa.hocon").write_text(AAOSA)
    (root / "registries" / "generated" / "manifest.hocon").write_text("{\n}")
    (root / "registries" / "manifest.hocon").write_text('{\n    include "generated/manifest.hocon",\n}\n')
    (root / "config").mkdir()
    (root / "config" / "llm_config.hocon").write_text(json.dumps({"llm_config": fake.llm_config()}))
    return root / "registries" / "manifest.hocon"


def _prompt(body: Any) -> str:
    return str(body["messages"][0]["content"]) if body["messages"][0]["role"] == "system" else ""


BROKEN = {
    "shop": {"instructions": "Sell coffee.", "description": "A coffee shop.", "tools": ["barista", "ghost"]},
    "barista": {"instructions": "Make coffee.", "description": ""},
}
SOUND = {
    "shop": {"instructions": "Sell coffee.", "description": "A coffee shop.", "tools": ["barista"]},
    "barista": {"instructions": "Make coffee.", "description": "Makes the drinks."},
}


def test_designed_network_is_validated_persisted_and_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # studio's includes are relative to the project root
    monkeypatch.delenv("AGENT_MANIFEST_FILE", raising=False)

    async def body(fake: FakeLlmServer) -> None:
        manifest = _project(tmp_path, fake)
        registry = NetworkRegistry.from_manifests([manifest])
        assert dict(registry.networks()) == {}
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[tmp_path / "coded"])
        fake.enqueue(_define(BROKEN, "a"), Reply.answer("done"), _define(SOUND, "b"), Reply.answer("Saved."))
        sly: dict[str, Any] = {"agent_network_name": "coffee_shop", "agent_network_queries": ["A latte please"]}
        messages = await run_chat(host, "designer", "Design a coffee shop", maximal=True, sly_data=sly)
        assert messages[-1].text == "Saved."
        returned = next(m.sly_data for m in reversed(messages) if m.sly_data)
        bodies = [request.body for request in fake.requests]
        assert len(bodies) == 4
        # No definition yet: nothing shown. Then the definition as the tool left it.
        assert _prompt(bodies[0]) == "Design agent networks."
        assert _prompt(bodies[1]) == (
            "Design agent networks.\n\n## Current Agent Network Definition\n\n```json\n"
            + json.dumps(BROKEN, indent=2) + "\n```"
        )  # fmt: skip
        # Sent back once with studio's text, then the fixed network is shown.
        assert bodies[2]["messages"][-2] == {"role": "assistant", "content": "done"}
        assert bodies[2]["messages"][-1] == {
            "role": "user",
            "content": "The agent network definition has structural issues: "
            "[\"Agent 'shop' references non-existent agent(s) in tools: 'ghost'\"]. "
            "Call `agent_network_editor` to fix these structural problems. "
            "The agent network definition has instructions-related issues: "
            "[\"barista 'function.description' cannot be empty.\"]. "
            "Call `agent_network_instructions_editor` to fix these instructions problems. "
            "Fix the structural issues first by calling `agent_network_editor`, "
            "then address the instructions issues with `agent_network_instructions_editor`.",
        }
        assert json.dumps(SOUND, indent=2) in _prompt(bodies[3])
        progress = [m.structure for m in messages if m.type == MessageType.AGENT_PROGRESS]
        assert {"agent_network_definition": SOUND, "agent_network_name": "coffee_shop"} in progress

        # Persisted: the file, its manifest entry, and the text and metadata for the client.
        written = tmp_path / "registries" / "generated" / "coffee_shop.hocon"
        assert written.read_text() == returned["agent_network_hocon_text"]
        assert '"generated/coffee_shop.hocon": true' in (written.parent / "manifest.hocon").read_text()
        assert returned["agent_network_metadata"]["sample_queries"] == ["A latte please"]
        assert returned["agent_network_definition"] == SOUND

        # Served after the reload, and it answers a chat on the fake LLM.
        result = registry.reload()
        assert result.added == {"generated/coffee_shop"}, registry.errors
        served = NetworkRunner(registry, factory, CodedToolResolver([]))
        fake.enqueue(Reply.answer("One latte coming up."))
        answer = await run_chat(served, "generated/coffee_shop", "A latte please")
        await factory.aclose()
        assert answer[-1].text == "One latte coming up."
        prompt = _prompt(fake.requests[-1].body)
        assert prompt.startswith("You are part of a team of assistants in coffee_shop.\n")
        assert "Sell coffee." in prompt and prompt.endswith("Delegate to your tools when they can help.")
        assert [tool["function"]["name"] for tool in fake.requests[-1].body["tools"]] == ["barista"]

    run_with_fake_llm(body)


@pytest.mark.parametrize(
    ("sly", "answer"),
    [
        ({"agent_network_definition": SOUND}, 'Error: "agent_network_name" is missing from sly_data.'),
        ({"agent_network_name": 3}, "Error: agent_network_name has to be str. Got int"),
        (
            {"agent_network_hocon_file": "registries/x.hocon"},
            "Error: Agent network config file is unavailable or not permitted. "
            "It must be an existing .hocon or .json file inside the registries directory.",
        ),
        (
            {"agent_reservations": [{"reservation_id": "gone-1"}]},
            "Error: Reservation 'gone-1' not found on this server",
        ),
        (
            {"agent_network_definition": SOUND, "agent_network_name": "manual", "skip_designer": True},
            "The network manual has been modified by the user.",
        ),
    ],
)
def test_definition_middleware_answers_without_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sly: dict[str, Any], answer: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_MANIFEST_FILE", raising=False)

    async def body(fake: FakeLlmServer) -> None:
        _project(tmp_path, fake)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[tmp_path / "coded"])
        messages = await run_chat(host, "designer", "go", sly_data=dict(sly))
        await factory.aclose()
        assert answer in messages[-1].text
        assert not messages[-1].text.startswith("Error from")
        assert fake.requests == []

    run_with_fake_llm(body)
    # skip_designer saves the client's definition without a model call.
    saved = (tmp_path / "registries" / "generated" / "manual.hocon").exists()
    assert saved == (sly.get("skip_designer") is True)


def test_reservations_mode_needs_the_reservationist_and_unknown_progress_style_is_refused_at_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def document(entry: dict[str, Any]) -> dict[str, Any]:
        return {
            "llm_config": {"class": "scripted"},
            "tools": [{"name": "designer", "instructions": "x", "middleware": [{"class": PERSISTENCE, **entry}]}],
        }

    allowed = {"allow": {"reservations": True}, "args": {"reservationist": True}}
    build_network(document(allowed), "<net>", "net")
    build_network(document({}), "<net>", "net")
    monkeypatch.setenv("AGENT_NETWORK_DESIGNER_USE_RESERVATIONS", "true")
    build_network(document(allowed), "<net>", "net")
    for entry in ({}, {"allow": {"reservations": True}}, {"args": {"reservationist": True}}):
        with pytest.raises(NetworkLoadError, match="USE_RESERVATIONS=true deploys .* needs"):
            build_network(document(entry), "<net>", "net")
    for lifetime in ("soon", "0", "-5"):
        monkeypatch.setenv("AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS", lifetime)
        with pytest.raises(NetworkLoadError, match="RESERVATIONS_LIFETIME_IN_SECONDS needs to be"):
            build_network(document(allowed), "<net>", "net")
    monkeypatch.delenv("AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS")
    monkeypatch.delenv("AGENT_NETWORK_DESIGNER_USE_RESERVATIONS")
    monkeypatch.setenv("AGENT_NETWORK_DESIGNER_PROGRESS_STYLE", "connectivity")
    with pytest.raises(NetworkLoadError, match="tools\\[0\\].middleware\\[0\\].*PROGRESS_STYLE"):
        build_network(document(allowed), "<net>", "net")


def test_skip_designer_saves_a_network_with_a_dict_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_MANIFEST_FILE", raising=False)
    network = {
        "worker": {"instructions": "Work.", "description": "Works."},
        "front": {"instructions": "Lead.", "description": "Leads.", "tools": ["worker", {"name": "inline"}]},
    }
    sly = {"agent_network_definition": network, "agent_network_name": "team", "skip_designer": True}

    async def body(fake: FakeLlmServer) -> None:
        _project(tmp_path, fake)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[tmp_path / "coded"])
        messages = await run_chat(host, "designer", "save", sly_data=sly)
        await factory.aclose()
        assert messages[-1].text == "The network team has been modified by the user."

    run_with_fake_llm(body)
    text = (tmp_path / "registries" / "generated" / "team.hocon").read_text()
    assert text.index('"name": "front"') < text.index('"name": "worker"')  # the front man first
    assert '"tools": ["worker", {"name": "inline"}]' in text
