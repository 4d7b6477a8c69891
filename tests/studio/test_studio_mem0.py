"""neuro-san-studio's persistent memory on the ``mem0`` backend: the real mem0ai client
(the ``mem0`` extra) against a fake Mem0 Platform on loopback (``fake_mem0``), driven by a
fake LLM that calls the ``persistent_memory`` tool; and the load-time refusals (package
missing, no ``MEM0_API_KEY``, a bad ``MEM0_HOST``).

mem0ai's telemetry is switched off before the package is first imported (it reads
``MEM0_TELEMETRY`` once, at import) and its folder (``MEM0_DIR``) is a temporary one.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.core.messages import MessageType
from neuro_san.network.builder import build_network
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.studio.fake_mem0 import FakeMem0Platform
from tests.support.runtime import SLY_MARKER, make_host, run_chat

MEMORY = "middleware.persistent_memory.persistent_memory_middleware.PersistentMemoryMiddleware"
KEY = "m0-test-key"
MEM0_INSTALLED = importlib.util.find_spec("mem0") is not None
needs_mem0 = pytest.mark.skipif(not MEM0_INSTALLED, reason="mem0ai is not installed (pip install -e '.[mem0]')")


@pytest.fixture
def mem0_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """mem0ai imported with its telemetry off and its folder in a temporary directory."""
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path_factory.mktemp("mem0_dir")))
    telemetry = importlib.import_module("mem0.memory.telemetry")
    assert telemetry.MEM0_TELEMETRY is False, "mem0 was imported with its telemetry on"
    for name in ("MEM0_API_KEY", "MEM0_HOST", "MEM0_DEFAULT_USER_ID"):
        monkeypatch.delenv(name, raising=False)
    yield


def _network(fake: FakeLlmServer, *, sly_data: bool = True) -> dict[str, Any]:
    args: dict[str, Any] = {"origin_str": True, "memory_config": {"storage": {"backend": "mem0"}}}
    if sly_data:
        args["sly_data"] = True
    middleware = {"class": MEMORY, "args": args}
    return {
        "llm_config": fake.llm_config(),
        "tools": [{"name": "assistant", "instructions": "Help the user.", "middleware": [middleware]}],
    }


def _memory_call(operation: str, call_id: str, **arguments: str) -> FakeToolCall:
    return FakeToolCall("persistent_memory", {"operation": operation, **arguments}, call_id)


def _results(messages: list[Any]) -> list[Any]:
    return [json.loads(m.text) for m in messages if m.type == MessageType.AGENT_TOOL_RESULT]


@needs_mem0
def test_mem0_memory_written_in_one_chat_is_read_back_in_the_next(
    mem0_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = {"user_id": f"{SLY_MARKER}alice"}, {"user_id": f"{SLY_MARKER}bob"}

    async def body(fake: FakeLlmServer) -> None:
        async with FakeMem0Platform(KEY) as platform:
            monkeypatch.setenv("MEM0_API_KEY", KEY)
            monkeypatch.setenv("MEM0_HOST", platform.url)
            host, factory = make_host({"memo/net": _network(fake)})
            fake.enqueue(
                Reply.calls(_memory_call("create", "a", topic="coffee_preference", content="Likes espresso.")),
                Reply.calls(_memory_call("append", "b", topic="coffee_preference", content="No sugar.")),
                Reply.answer("Noted."),
            )
            first = await run_chat(host, "memo/net", "I like espresso, no sugar.", sly_data=alice)
            assert first[-1].text == "Noted."
            # One memory for the topic: the append updated it in place, scoped as studio scopes it.
            (stored,) = platform.memories.values()
            assert {key: stored[key] for key in ("user_id", "app_id", "agent_id", "metadata")} == {
                "user_id": f"{SLY_MARKER}alice", "app_id": "memo_net", "agent_id": "assistant",
                "metadata": {"topic": "coffee_preference"},
            }  # fmt: skip
            added = [body for method, path, body in platform.requests if (method, path) == ("POST", "/v1/memories/")]
            assert len(added) == 1 and added[0]["infer"] is False

            # A new chat of the same user: list, read, search.
            fake.enqueue(
                Reply.calls(_memory_call("list", "c")),
                Reply.calls(
                    _memory_call("read", "d", topic="coffee_preference"),
                    _memory_call("search", "e", query="espresso please"),
                    _memory_call("read", "f", topic="tea"),
                ),  # fmt: skip
                Reply.answer("You like espresso."),
            )
            second = _results(await run_chat(host, "memo/net", "What coffee?", maximal=True, sly_data=alice))
            assert second[0] == {"result": {"topics": ["coffee_preference"]}}
            read = next(r["result"] for r in second if "content" in r.get("result", {}))
            assert read["topic"] == "coffee_preference"
            assert read["content"].startswith("Likes espresso.\n[") and read["content"].endswith("] No sugar.")
            hits = next(r["result"]["results"] for r in second if "results" in r.get("result", {}))
            assert hits == [{"topic": "coffee_preference", "content": read["content"], "score": 0.5}]
            assert {"error": "No memory entry found for topic='tea'."} in second

            # Another user of the same agent sees nothing; then the first one deletes the topic.
            fake.enqueue(Reply.calls(_memory_call("list", "g")), Reply.answer("Nothing yet."))
            third = _results(await run_chat(host, "memo/net", "What do you know?", maximal=True, sly_data=bob))
            assert third == [{"result": {"topics": []}}]
            fake.enqueue(Reply.calls(_memory_call("delete", "h", topic="coffee_preference")),
                         Reply.calls(_memory_call("list", "i")), Reply.answer("Forgotten."))  # fmt: skip
            fourth = _results(await run_chat(host, "memo/net", "Forget it.", maximal=True, sly_data=alice))
            assert fourth == [{"result": {"status": "deleted", "topic": "coffee_preference"}},
                              {"result": {"topics": []}}]  # fmt: skip
            assert platform.memories == {}
            await factory.aclose()

    run_with_fake_llm(body)


@needs_mem0
def test_mem0_without_sly_data_uses_the_default_user_and_platform_errors_reach_the_model(
    mem0_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(fake: FakeLlmServer) -> None:
        async with FakeMem0Platform(KEY) as platform:
            monkeypatch.setenv("MEM0_HOST", platform.url)
            monkeypatch.setenv("MEM0_API_KEY", KEY)
            monkeypatch.setenv("MEM0_DEFAULT_USER_ID", "team")
            host, factory = make_host({"net": _network(fake, sly_data=False)})
            fake.enqueue(Reply.calls(_memory_call("create", "a", topic="role", content="Engineer")), Reply.answer("ok"))
            await run_chat(host, "net", "remember", sly_data={"user_id": f"{SLY_MARKER}ignored"})
            assert [m["user_id"] for m in platform.memories.values()] == ["team"]
            # A key the Platform refuses: the model gets the reason as the tool's error, the chat goes on.
            monkeypatch.setenv("MEM0_API_KEY", "wrong-key")
            host, factory2 = make_host({"net": _network(fake, sly_data=False)})
            fake.enqueue(Reply.calls(_memory_call("list", "b")), Reply.answer("no memory today"))
            messages = await run_chat(host, "net", "recall", maximal=True)
            assert messages[-1].text == "no memory today"
            (error,) = _results(messages)
            assert error["error"].startswith("Mem0 search failed: ") and "Invalid API key" in error["error"]
            await factory.aclose()
            await factory2.aclose()

    run_with_fake_llm(body)


def _build(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("MEM0_API_KEY", "MEM0_HOST", "MEM0_DEFAULT_USER_ID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    document = {
        "llm_config": {"class": "scripted"},
        "tools": [{"name": "assistant", "instructions": "x", "middleware": [
            {"class": MEMORY, "args": {"memory_config": {"storage": {"backend": "mem0"}}}}]}],
    }  # fmt: skip
    with pytest.raises(NetworkLoadError) as caught:
        build_network(document, "<net>", "net")
    message = str(caught.value)
    assert "tools[0].middleware[0].args.memory_config.storage.backend" in message
    return message


def test_mem0_without_the_package_is_refused_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mem0", None)  # as if mem0ai were not installed
    message = _build({"MEM0_API_KEY": KEY}, monkeypatch)
    assert "needs the mem0ai package, which is not installed" in message
    assert "neuro-san-grpc[mem0]" in message


@needs_mem0
@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({}, "needs MEM0_API_KEY"),
        ({"MEM0_API_KEY": " "}, "needs MEM0_API_KEY"),
        ({"MEM0_API_KEY": KEY, "MEM0_HOST": "127.0.0.1:9"}, "MEM0_HOST must be an http(s) URL"),
    ],
)
def test_mem0_without_a_key_or_with_a_bad_host_is_refused_at_load(
    env: dict[str, str], reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert reason in _build(env, monkeypatch)


def test_mem0_extra_is_declared_with_the_supported_range() -> None:
    """The ``mem0`` extra and the store's version check name the same range."""
    from neuro_san.studio.memory_mem0 import SUPPORTED_TEXT

    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert f'mem0 = ["{SUPPORTED_TEXT}"]' in pyproject
