"""neuro-san-studio's middleware, native: a fake LLM (real HTTP, OpenAI wire format) calls
the tools each middleware adds, and what the tools did is checked where it lands: the
memory files across two chats, the checklist in the next system prompt and the progress
reports; and the classes not implemented are refused at load with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat

MEMORY = "middleware.persistent_memory.persistent_memory_middleware.PersistentMemoryMiddleware"
CHECKLIST = "middleware.agent_checklist_middleware.AgentChecklistMiddleware"
SKILLS = "middleware.agent_skills_middleware.AgentSkillsMiddleware"


def _network(fake: FakeLlmServer, middleware: dict[str, Any]) -> dict[str, Any]:
    return {
        "llm_config": fake.llm_config(),
        "tools": [{"name": "assistant", "instructions": "Help the user.", "middleware": [middleware]}],
    }


def _memory(folder: Path, backend: str = "json_file", **config: Any) -> dict[str, Any]:
    storage = {"backend": backend, "folder_name": str(folder), "file_name": "memory"}
    return {"class": MEMORY, "args": {"origin_str": True, "memory_config": {"storage": storage, **config}}}


def _system_prompt(body: Any) -> str:
    return str(body["messages"][0]["content"]) if body["messages"][0]["role"] == "system" else ""


@pytest.mark.parametrize("backend", ["json_file", "markdown_file"])
def test_memory_written_in_one_chat_is_read_back_in_the_next(tmp_path: Path, backend: str) -> None:
    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"memo/net": _network(fake, _memory(tmp_path, backend))})
        create = {"operation": "create", "topic": "coffee_preference", "content": "Likes espresso."}
        fake.enqueue(
            Reply.calls(FakeToolCall("persistent_memory", create)),
            Reply.calls(FakeToolCall("persistent_memory", {"operation": "append", "topic": "coffee_preference",
                                                            "content": "No sugar."})),  # fmt: skip
            Reply.answer("Noted."),
        )
        first = await run_chat(host, "memo/net", "I like espresso, no sugar.")
        assert first[-1].text == "Noted."
        # A new chat (no chat_context): the model lists, then reads what the first one stored.
        fake.enqueue(
            Reply.calls(FakeToolCall("persistent_memory", {"operation": "list"})),
            Reply.calls(FakeToolCall("persistent_memory", {"operation": "read", "topic": "coffee_preference"})),
            Reply.answer("You like espresso."),
        )
        second = await run_chat(host, "memo/net", "What coffee do I like?", maximal=True)
        await factory.aclose()
        results = [m.text for m in second if m.type == MessageType.AGENT_TOOL_RESULT]
        assert json.loads(results[0]) == {"result": {"topics": ["coffee_preference"]}}
        read = json.loads(results[1])["result"]
        assert read["topic"] == "coffee_preference"
        assert read["content"].startswith("Likes espresso.\n[") and read["content"].endswith("] No sugar.")
        # The tool and the preamble were offered to the model.
        request = fake.requests[-1].body
        assert "persistent_memory" in [tool["function"]["name"] for tool in request["tools"]]
        assert _system_prompt(request).startswith("Help the user.\n\n")
        assert "'persistent_memory' tool" in _system_prompt(request)

    run_with_fake_llm(body)
    agent_folder = tmp_path / "memo_net" / "assistant"
    if backend == "json_file":
        stored = json.loads((agent_folder / "memory.json").read_text())
        assert list(stored) == ["coffee_preference"]
    else:
        text = (agent_folder / "coffee_preference.md").read_text()
        assert text.startswith("# coffee_preference\n\nLikes espresso.\n[")


def test_memory_search_errors_and_enabled_operations(tmp_path: Path) -> None:
    async def body(fake: FakeLlmServer) -> None:
        config = _memory(tmp_path, enabled_operations=["create", "search"])
        host, factory = make_host({"net": _network(fake, config)})
        role = {"operation": "create", "topic": "role", "content": "Data engineer"}
        city = {"operation": "create", "topic": "city", "content": "Lives in Oslo"}
        calls = [FakeToolCall("persistent_memory", role, "c1"), FakeToolCall("persistent_memory", city, "c2")]
        fake.enqueue(
            Reply.calls(*calls),
            Reply.calls(FakeToolCall("persistent_memory", {"operation": "search", "query": "oslo engineer x"}, "c3"),
                        FakeToolCall("persistent_memory", {"operation": "delete", "topic": "role"}, "c4"),
                        FakeToolCall("persistent_memory", {"operation": "create", "topic": "t"}, "c5")),  # fmt: skip
            Reply.answer("done"),
        )
        messages = await run_chat(host, "net", "remember", maximal=True)
        await factory.aclose()
        # Parallel calls: their results arrive in any order.
        results = [json.loads(m.text) for m in messages if m.type == MessageType.AGENT_TOOL_RESULT]
        hits = next(r["result"]["results"] for r in results if "results" in r.get("result", {}))
        assert sorted((hit["topic"], hit["score"]) for hit in hits) == [("city", 0.3333), ("role", 0.3333)]
        assert {"error": "Operation 'delete' is not enabled for this agent. Enabled: create, search"} in results
        assert {"error": "Operation 'create' requires 'content'."} in results

    run_with_fake_llm(body)


def test_checklist_tools_update_the_next_system_prompt_and_report_progress() -> None:
    async def body(fake: FakeLlmServer) -> None:
        checklist = {"class": CHECKLIST, "args": {"checklist_title": "My Plan", "progress_reporter": True}}
        host, factory = make_host({"net": _network(fake, checklist)})
        fake.enqueue(
            Reply.calls(FakeToolCall("create_checklist", {"items": ["Read", "Plan", " "]})),
            Reply.calls(FakeToolCall("update_checklist_item", {"item_index": 1, "status": "done", "notes": "ok"})),
            Reply.calls(FakeToolCall("edit_checklist_item", {"item_index": 2, "new_item": "Plan better"}),
                        FakeToolCall("update_checklist_item", {"item_index": 7, "status": "done"}, "bad")),  # fmt: skip
            Reply.answer("finished"),
        )
        messages = await run_chat(host, "net", "solve it", maximal=True)
        await factory.aclose()
        assert messages[-1].text == "finished"
        first_prompt = _system_prompt(fake.requests[0].body)
        assert first_prompt == "Help the user."  # no checklist yet: nothing added
        last_prompt = _system_prompt(fake.requests[-1].body)
        assert last_prompt.startswith("Help the user.\n\n## My Plan\n")
        assert "1. [x] Read\n   > ok\n2. [ ] Plan better\n" in last_prompt
        assert last_prompt.endswith("Progress: 1/2 done, 0 skipped\n")
        assert last_prompt.count("## My Plan") == 1  # shown once per call, not piled up
        results = [m.text for m in messages if m.type == MessageType.AGENT_TOOL_RESULT]
        assert any(r.startswith("Error: Item index 7 is out of range. Checklist has 2 item(s)") for r in results)
        progress = [m.structure for m in messages if m.type == MessageType.AGENT_PROGRESS]
        assert {"progress": 0.5} in progress and {"progress": 0.0} in progress

    run_with_fake_llm(body)


@pytest.mark.parametrize(
    ("middleware", "reason"),
    [
        ({"class": SKILLS, "args": {}}, "skill_sources"),
        (
            {"class": "middleware.agent_network_designer.agent_network_definition_middleware."
             "AgentNetworkDefinitionMiddleware", "args": {"typo": 1}},  # fmt: skip
            "typo",
        ),
        ({"class": MEMORY, "args": {"memory_config": {"storage": {"backend": "json_file"}, "typo": 1}}}, "typo"),
        ({"class": CHECKLIST, "args": {"initial_checklist": [{"item": "x", "status": "later"}]}}, "status"),
    ],
)
def test_unimplemented_or_bad_studio_middleware_is_refused(middleware: dict[str, Any], reason: str) -> None:
    document = {
        "llm_config": {"class": "scripted"},
        "tools": [{"name": "assistant", "instructions": "x", "middleware": [middleware]}],
    }
    with pytest.raises(NetworkLoadError) as caught:
        build_network(document, "<net>", "net")
    assert reason in str(caught.value)
    assert "tools[0].middleware[0]" in str(caught.value)


def _skill(folder: Path, name: str, description: str) -> None:
    folder.mkdir(parents=True)
    front = f"---\nname: {name}\ndescription: {description}\n---\n"
    (folder / "SKILL.md").write_text(f"{front}\n# {name}\nSee references/REF.md\n")
    (folder / "references").mkdir()
    (folder / "references" / "REF.md").write_text(f"reference of {name}")


def test_skills_local_and_remote_are_listed_loaded_and_their_files_read(tmp_path: Path) -> None:
    local = tmp_path / "skills" / "naming"
    _skill(local, "name-analytics", "Guess a job from a name.")
    _skill(tmp_path / "served" / "comms", "internal-comms", "Write internal communications.")
    (tmp_path / "skills" / "broken").mkdir()
    (tmp_path / "skills" / "broken" / "SKILL.md").write_text("no front matter")
    (tmp_path / "secret.txt").write_text("not a skill file")

    async def body(fake: FakeLlmServer) -> None:
        app = web.Application()
        app.router.add_static("/skills/", tmp_path / "served")
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        remote = f"http://127.0.0.1:{port}/skills/comms"
        sources = [str(local), str(tmp_path / "skills" / "broken"), remote]
        host, factory = make_host({"net": _network(fake, {"class": SKILLS, "args": {"skill_sources": sources}})})
        fake.enqueue(
            Reply.calls(FakeToolCall("get_full_skill_content", {"skill_name": "name-analytics"}, "a"),
                        FakeToolCall("get_full_skill_content", {"skill_name": "nope"}, "b")),
            Reply.calls(FakeToolCall("load_skill_resource_local", {"resource_path": f"{local}/references/REF.md"}, "c"),
                        FakeToolCall("load_skill_resource_local", {"resource_path": str(tmp_path / "secret.txt")}, "d"),
                        FakeToolCall("load_skill_resource_remote", {"resource_url": f"{remote}/references/REF.md"},
                                     "e")),
            Reply.answer("skilled"),
        )  # fmt: skip
        messages = await run_chat(host, "net", "What is Jack's job?", maximal=True)
        await factory.aclose()
        await runner.cleanup()
        results = [m.text for m in messages if m.type == MessageType.AGENT_TOOL_RESULT]
        full = next(r for r in results if "# name-analytics" in r)
        assert f"**Skill Directory**: `{local}`" in full and "load_skill_resource_local" in full
        assert "Error: Skill 'nope' not found. Available skills: name-analytics, internal-comms" in results
        assert "reference of name-analytics" in results
        assert "reference of internal-comms" in results
        assert f"Error: Path {tmp_path / 'secret.txt'} not under any configured skill source" in results
        prompt = _system_prompt(fake.requests[0].body)
        assert prompt.startswith("Help the user.\n\n## Available Skills\n")
        assert "**name-analytics**\n  - Description: Guess a job from a name.\n" in prompt
        assert f"  - Location: `{remote}/SKILL.md`" in prompt
        assert "broken" not in prompt
        offered = [tool["function"]["name"] for tool in fake.requests[0].body["tools"]]
        assert offered == ["get_full_skill_content", "load_skill_resource_local", "load_skill_resource_remote"]

    run_with_fake_llm(body)


DEFINER = '''
import json
from neuro_san.interfaces.coded_tool import CodedTool


class Definer(CodedTool):
    async def async_invoke(self, args, sly_data):
        sly_data["agent_network_definition"] = json.loads(args["definition"])
        return "stored"
'''
STRUCTURE = (
    "middleware.agent_network_designer.validation.agent_network_structure_validation_middleware."
    "AgentNetworkStructureValidationMiddleware"
)
INSTRUCTIONS = (
    "middleware.agent_network_designer.validation.agent_network_instructions_validation_middleware."
    "AgentNetworkInstructionsValidationMiddleware"
)


def _designer(fake: FakeLlmServer, middleware_class: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"definition": {"type": "string"}}, "required": ["definition"]}
    return {
        "llm_config": fake.llm_config(),
        "tools": [
            {
                "name": "editor",
                "instructions": "Edit the network.",
                "tools": ["set_definition"],
                "middleware": [{"class": middleware_class, "args": {"sly_data": True}}],
            },
            {
                "name": "set_definition",
                "function": {"description": "d", "parameters": parameters},
                "class": "definer.Definer",
            },
        ],
    }


def _define(network: dict[str, Any], call_id: str) -> Reply:
    return Reply.calls(FakeToolCall("set_definition", {"definition": json.dumps(network)}, call_id))


def test_structure_validation_sends_the_model_back_until_the_network_is_sound(tmp_path: Path) -> None:
    (tmp_path / "definer.py").write_text(DEFINER)
    broken = {
        "boss": {"instructions": "x", "tools": ["worker", "ghost"]},
        "worker": {"instructions": "y", "tools": ["boss"]},
        "stray": {"instructions": "z", "tools": ["helper"], "args": {"tools": 3}},
        "helper": {"instructions": "h"},
    }
    sound = {"boss": {"instructions": "x", "tools": ["worker"]}, "worker": {"instructions": "y"}}

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"net": _designer(fake, STRUCTURE)}, tool_roots=[tmp_path])
        fake.enqueue(
            Reply.answer("nothing yet"),  # no definition at all: sent back
            _define(broken, "a"),
            Reply.answer("done"),  # sent back with the errors
            _define(sound, "b"),
            Reply.answer("fixed"),
        )
        messages = await run_chat(host, "net", "design it")
        await factory.aclose()
        assert messages[-1].text == "fixed"
        bodies = [request.body for request in fake.requests]
        assert len(bodies) == 5
        assert bodies[1]["messages"][-2:] == [
            {"role": "assistant", "content": "nothing yet"},
            {"role": "user", "content": "Error: No agent network found. Please create a new agent network using "
                                        "`create_new_network` tool"},
        ]  # fmt: skip
        sent_back = bodies[3]["messages"][-1]
        assert sent_back["role"] == "user"
        assert sent_back["content"] == (
            "Errors detected:\n"
            "- stray 'args.tools' must be a dict or list, got int.\n"
            "- Cyclical dependencies found in agents: ['boss', 'worker']\n"
            "- Agent 'boss' references non-existent agent(s) in tools: 'ghost'\n"
            # boss and worker call each other, so stray is the one front man.
            "- Unreachable agents found: ['boss', 'worker']\n"
            "\nUse your tools to fix the errors."
        )

    run_with_fake_llm(body)


def test_instructions_validation_reports_empty_instructions_and_descriptions(tmp_path: Path) -> None:
    (tmp_path / "definer.py").write_text(DEFINER)
    lacking = {"boss": {"instructions": " ", "description": "", "tools": ["w"]}, "w": {"instructions": 3}}

    async def body(fake: FakeLlmServer) -> None:
        host, factory = make_host({"net": _designer(fake, INSTRUCTIONS)}, tool_roots=[tmp_path])
        fake.enqueue(_define(lacking, "a"), Reply.answer("done"), _define({"boss": {"instructions": "ok"}}, "b"),
                     Reply.answer("fixed"))  # fmt: skip
        messages = await run_chat(host, "net", "write instructions")
        await factory.aclose()
        assert messages[-1].text == "fixed"
        assert fake.requests[2].body["messages"][-1]["content"] == (
            "Error(s):\n"
            "boss 'function.description' cannot be empty.\n"
            "boss 'instructions' cannot be empty.\n"
            "w 'instructions' must be a str, got int."
        )

    run_with_fake_llm(body)
