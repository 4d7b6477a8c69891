"""neuro-san-studio's Agent Network Designer, the parts beyond file persistence: deploying a
designed network as a temporary network (``AGENT_NETWORK_DESIGNER_USE_RESERVATIONS=true``)
and loading a network to edit from ``agent_network_hocon_file`` or ``agent_reservations``.
Real parts: the host with its reservation store, the designer's middleware, a fake LLM over
HTTP (OpenAI wire format) and a temporary studio project as the working directory."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.messages import ChatMessage
from neuro_san.runtime.network_runner import NetworkRunner
from neuro_san.studio.designer_files import DEMO_SENTENCE, FRONT_MAN_LINES, PREFIX_OPENING, PREFIX_RULES
from neuro_san.studio.designer_instructions import CommonInstructions
from tests.fakes.fake_llm import FakeLlmServer, Reply, run_with_fake_llm
from tests.studio.test_studio_designer import SOUND, _define, _designer, _project, _prompt
from tests.support.runtime import make_host, run_chat

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
UNAVAILABLE = (
    "Error: Agent network config file is unavailable or not permitted. "
    "It must be an existing .hocon or .json file inside the registries directory."
)
# A network as a person writes one in a studio project: includes from the project root,
# substitutions, a metadata block, a front man, an agent with tools and a leaf.
HAND_WRITTEN = """
{
    include "registries/aaosa.hocon"
    include "config/llm_config.hocon"
    "metadata": {"description": "Coffee, handmade.", "sample_queries": ["A mocha?"], "tags": ["food"]},
    "tools": [
        {
            "name": "counter",
            "function": ${aaosa_call}{"description": "Takes orders."},
            "instructions": "  Take the order.  ",
            "tools": ["bar"]
        },
        {
            "name": "bar",
            "function": ${aaosa_call}{"description": "The bar."},
            "instructions": "Pour. "${aaosa_instructions},
            "tools": ["cup"]
        },
        {"name": "cup", "function": {"description": "A cup."}, "instructions": "Hold coffee."}
    ]
}
"""
HAND_WRITTEN_DEFINITION = {
    "counter": {"instructions": "Take the order.", "description": "Takes orders.", "tools": ["bar"]},
    "bar": {"instructions": "Pour.", "description": "The bar.", "tools": ["cup"]},  # the AAOSA copy stripped
    "cup": {"instructions": "Hold coffee.", "description": "A cup."},
}


def _returned(messages: list[ChatMessage]) -> dict[str, Any]:
    return next(m.sly_data for m in reversed(messages) if m.sly_data)


def _files(root: Path) -> dict[str, str]:
    """The project's network files and configuration (where a save would write)."""
    found = [*(root / "registries").rglob("*"), *(root / "config").rglob("*")]
    return {str(p.relative_to(root)): p.read_text() for p in sorted(found) if p.is_file()}


@pytest.fixture
def project_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # studio's includes and project files are relative to the project root
    monkeypatch.delenv("AGENT_MANIFEST_FILE", raising=False)
    return tmp_path


def _reservations_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_NETWORK_DESIGNER_USE_RESERVATIONS", "true")
    monkeypatch.setenv("AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS", "120")


async def _chat_with_deployed(host: NetworkRunner, fake: FakeLlmServer, reservation_id: str) -> None:
    """The temporary network answers by its reservation id, with the designed agents."""
    fake.enqueue(Reply.answer("One latte coming up."))
    answer = await run_chat(host, reservation_id, "A latte please")
    assert answer[-1].text == "One latte coming up."
    prompt = _prompt(fake.requests[-1].body)
    assert prompt.startswith("You are part of a team of assistants in coffee_shop.\n")
    assert "Never express irrelevance" in prompt and "Sell coffee." in prompt
    assert prompt.endswith("Delegate to your tools when they can help.")
    assert [tool["function"]["name"] for tool in fake.requests[-1].body["tools"]] == ["barista"]


def test_designed_network_is_deployed_as_a_temporary_network(
    project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reservations_mode(monkeypatch)

    async def body(fake: FakeLlmServer) -> None:
        _project(project_dir, fake)
        before = _files(project_dir)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[project_dir / "coded"])
        fake.enqueue(_define(SOUND, "a"), Reply.answer("Deployed."))
        sly: dict[str, Any] = {"agent_network_name": "coffee_shop", "agent_network_queries": ["A latte please"]}
        started = time.time()
        messages = await run_chat(host, "designer", "Design a coffee shop", sly_data=sly)
        assert messages[-1].text == "Deployed."
        returned = _returned(messages)

        # studio's handle: one entry, the id made of the name and a uuid, the lifetime asked for.
        [handle] = returned["agent_reservations"]
        assert set(handle) == {"reservation_id", "lifetime_in_seconds", "expiration_time_in_seconds"}
        assert re.fullmatch(f"coffee_shop-{UUID}", handle["reservation_id"])
        assert handle["lifetime_in_seconds"] == 120.0
        assert started + 120 <= handle["expiration_time_in_seconds"] <= time.time() + 120
        # No file: nothing in the project changed. The text and the block come back all the same.
        assert _files(project_dir) == before
        assert returned["agent_network_metadata"] == {"sample_queries": ["A latte please"]}  # no dates
        text = returned["agent_network_hocon_text"]
        assert '"date_created"' in text and '"date_modified"' not in text
        assert '"name": "shop"' in text and '"sample_queries": [' in text
        assert returned["agent_network_definition"] == SOUND

        await _chat_with_deployed(host, fake, handle["reservation_id"])
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_refused_deploy_ends_the_turn_with_studios_error(project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _reservations_mode(monkeypatch)
    # An agent without instructions or tools is a toolbox tool of its own name: none exists here.
    network = {
        "shop": {"instructions": "Sell coffee.", "description": "A coffee shop.", "tools": ["grinder"]},
        "grinder": {"description": "Grinds beans."},
    }

    async def body(fake: FakeLlmServer) -> None:
        _project(project_dir, fake)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[project_dir / "coded"])
        sly = {
            "agent_network_definition": network,
            "agent_network_name": "coffee_shop",
            "skip_designer": True,
            "agent_reservations": [{"reservation_id": "coffee_shop-old"}],
        }
        messages = await run_chat(host, "designer", "save", sly_data=sly)
        await factory.aclose()
        answer = messages[-1].text
        assert answer.startswith("Error: the agent network could not be deployed as a temporary network: ")
        assert "grinder" in answer
        returned = _returned(messages)
        assert "agent_reservations" not in returned  # the old handle is not handed back as this one's
        assert '"name": "grinder"' in returned["agent_network_hocon_text"]
        assert returned["agent_network_metadata"] == {}
        assert fake.requests == []

    run_with_fake_llm(body)


@pytest.mark.parametrize(
    "reference", ["generated/hand_made.hocon", "registries/generated/hand_made.hocon", "<abs>/hand_made.hocon"]
)
def test_a_network_file_is_loaded_and_handed_back(project_dir: Path, reference: str) -> None:
    async def body(fake: FakeLlmServer) -> None:
        _project(project_dir, fake)
        (project_dir / "registries" / "generated" / "hand_made.hocon").write_text(HAND_WRITTEN)
        before = _files(project_dir)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[project_dir / "coded"])
        where = reference.replace("<abs>", str(project_dir / "registries" / "generated"))
        sly = {"agent_network_hocon_file": where, "skip_designer": True, "agent_network_hocon_text": "stale"}
        messages = await run_chat(host, "designer", "load", sly_data=sly)
        await factory.aclose()
        assert messages[-1].text == "The network hand_made has been loaded."
        returned = _returned(messages)
        assert returned["agent_network_definition"] == HAND_WRITTEN_DEFINITION
        assert returned["agent_network_name"] == "hand_made"
        assert returned["agent_network_metadata"] == {
            "description": "Coffee, handmade.",
            "sample_queries": ["A mocha?"],
            "tags": ["food"],
        }
        assert "agent_network_hocon_text" not in returned  # only a load: nothing assembled
        assert _files(project_dir) == before  # not saved
        assert fake.requests == []

    run_with_fake_llm(body)


def test_a_loaded_file_is_shown_to_the_model_and_saved_after_the_edit(project_dir: Path) -> None:
    async def body(fake: FakeLlmServer) -> None:
        _project(project_dir, fake)
        (project_dir / "registries" / "generated" / "hand_made.hocon").write_text(HAND_WRITTEN)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[project_dir / "coded"])
        fake.enqueue(Reply.answer("Looks good."))
        sly = {"agent_network_hocon_file": "generated/hand_made.hocon"}
        messages = await run_chat(host, "designer", "Review it", sly_data=sly)
        await factory.aclose()
        assert messages[-1].text == "Looks good."
        # The first model call already sees the loaded network.
        assert json.dumps(HAND_WRITTEN_DEFINITION, indent=2) in _prompt(fake.requests[0].body)
        returned = _returned(messages)
        assert returned["agent_network_name"] == "hand_made"
        # Not only a load: the persistence middleware saved it again, with the file's block.
        saved = (project_dir / "registries" / "generated" / "hand_made.hocon").read_text()
        assert saved == returned["agent_network_hocon_text"]
        assert '"description": "Coffee, handmade."' in saved

    run_with_fake_llm(body)


@pytest.mark.parametrize(
    ("sly", "answer"),
    [
        ({"agent_network_hocon_file": "generated/nowhere.hocon", "skip_designer": True}, UNAVAILABLE),
        ({"agent_network_hocon_file": "../outside.hocon", "skip_designer": True}, UNAVAILABLE),
        ({"agent_network_hocon_file": "generated/manifest.txt", "skip_designer": True}, UNAVAILABLE),
        (
            {"agent_network_hocon_file": "generated/broken.hocon", "skip_designer": True},
            "Error: Failed to parse agent network config file 'generated/broken.hocon'.",
        ),
        (
            {"agent_network_hocon_file": "generated/no_tools.hocon", "skip_designer": True},
            "Error: No field 'tools' found in config from generated/no_tools.hocon.",
        ),
        (
            {"agent_reservations": [{"reservation_id": f"coffee_shop-{'0' * 8}"}], "skip_designer": True},
            f"Error: Reservation 'coffee_shop-{'0' * 8}' not found on this server",
        ),
        (
            {"agent_reservations": [{"lifetime_in_seconds": 3}], "skip_designer": True},
            'Error: nothing was loaded. With "skip_designer" and no "agent_network_definition", send '
            '"agent_network_hocon_file", or "agent_reservations" with a "reservation_id" in its last entry.',
        ),
        (
            {"agent_reservations": [{"reservation_id": 7}]},
            "Error: Invalid 'reservation_id' value: int (expected a non-empty string).",
        ),
    ],
)
def test_a_network_that_cannot_be_loaded_gets_studios_error(
    project_dir: Path, sly: dict[str, Any], answer: str
) -> None:
    async def body(fake: FakeLlmServer) -> None:
        _project(project_dir, fake)
        generated = project_dir / "registries" / "generated"
        (generated / "broken.hocon").write_text('{"tools": [')
        (generated / "no_tools.hocon").write_text('{"metadata": {}}')
        (generated / "manifest.txt").write_text(HAND_WRITTEN)
        (project_dir / "outside.hocon").write_text(HAND_WRITTEN)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[project_dir / "coded"])
        messages = await run_chat(host, "designer", "load", sly_data=dict(sly))
        await factory.aclose()
        assert messages[-1].text.startswith(answer)
        assert not any("agent_network_definition" in m.sly_data for m in messages if m.sly_data)
        assert fake.requests == []

    run_with_fake_llm(body)


def test_a_deployed_network_is_loaded_back_by_its_reservation(
    project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reservations_mode(monkeypatch)
    tagged = {"description": "Coffee to go.", "tags": ["food"]}

    async def body(fake: FakeLlmServer) -> None:
        _project(project_dir, fake)
        host, factory = make_host({"designer": _designer(fake)}, tool_roots=[project_dir / "coded"])
        save = {
            "agent_network_definition": SOUND,
            "agent_network_name": "coffee_shop",
            "agent_network_metadata": tagged,
            "skip_designer": True,
        }
        saved = _returned(await run_chat(host, "designer", "save", sly_data=save))
        handles = saved["agent_reservations"]
        # Loaded in another request of the same server: the id is the last entry's.
        load = {"agent_reservations": [{"reservation_id": "earlier"}, *handles], "skip_designer": True}
        messages = await run_chat(host, "designer", "load", sly_data=load)
        await factory.aclose()
        assert messages[-1].text == "The network coffee_shop has been loaded."
        returned = _returned(messages)
        assert returned["agent_network_name"] == "coffee_shop"  # the id without its uuid
        assert returned["agent_network_metadata"] == tagged
        assert "agent_network_hocon_text" not in returned
        # The deployed instructions hold the common pieces; the definition is the agents' own text again.
        assert returned["agent_network_definition"] == SOUND
        assert fake.requests == []

    run_with_fake_llm(body)


AAOSA_TEXT = "Delegate to your tools\n  when they can help."


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("Sell coffee.", "Sell coffee."),
        # Interleaved copies under other network names, any whitespace, AAOSA copies at the end.
        (
            f"{PREFIX_OPENING} old shop.\n{PREFIX_RULES}\n{FRONT_MAN_LINES}\n"
            f"{PREFIX_OPENING}  my   coffee shop.  {PREFIX_RULES} {FRONT_MAN_LINES}\n  Sell\n coffee.  "
            "Delegate to your tools when they can help. Delegate to your tools when\tthey can help.",
            "Sell\n coffee.",
        ),
        (f"{PREFIX_OPENING} shop.\n{PREFIX_RULES} {DEMO_SENTENCE} Brew.", "Brew."),
        # Only copies: one of each piece is kept (an empty text would fail validation).
        (
            f"{PREFIX_OPENING} a.\n{PREFIX_RULES} {PREFIX_OPENING} b.\n{PREFIX_RULES} {AAOSA_TEXT}",
            f"{PREFIX_OPENING} a.\n{PREFIX_RULES}\n{AAOSA_TEXT}",
        ),
        # Not whole copies, or not at their end of the text: left alone.
        (f"Sell coffee. {PREFIX_RULES}", f"Sell coffee. {PREFIX_RULES}"),
        (
            f"{PREFIX_OPENING} shop without a period {PREFIX_RULES} x",
            f"{PREFIX_OPENING} shop without a period {PREFIX_RULES} x",
        ),
        (
            "Delegate to your tools when they can help. Then sell.",
            "Delegate to your tools when they can help. Then sell.",
        ),
    ],
)
def test_common_instructions_are_stripped_as_studio_strips_them(text: str, stripped: str) -> None:
    assert CommonInstructions(AAOSA_TEXT).strip(text) == stripped
