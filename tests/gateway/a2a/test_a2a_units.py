"""The A2A pieces that keep state or parse configuration, on their own."""

from __future__ import annotations

import asyncio

import pytest
from a2a.server.context import ServerCallContext
from a2a.types import Task

from gateway.a2a.conversations import ConversationStore
from gateway.a2a.tasks import OWNER_KEY, BoundedTaskStore, owner_of
from neuro_san.core.errors import ConfigurationError
from neuro_san.network.a2a_refs import a2a_headers, a2a_url, ref_from_dict
from neuro_san.runtime.tool_binding import tool_function_name


def test_the_context_memory_is_bounded_and_expires() -> None:
    now = [0.0]
    store = ConversationStore(max_entries=2, ttl_seconds=10, clock=lambda: now[0])
    store.put("a", {"n": 1})
    store.put("b", {"n": 2})
    assert store.get("a") == {"n": 1}  # a is now the most recently used
    store.put("c", {"n": 3})
    assert store.get("b") is None and store.get("a") == {"n": 1} and len(store) == 2
    now[0] = 10.0
    assert store.get("a") is None and store.get("c") is None


def test_the_task_store_forgets_the_oldest_and_scopes_by_owner() -> None:
    async def scenario() -> None:
        store = BoundedTaskStore(max_tasks=2)
        mine, theirs = (ServerCallContext(state={OWNER_KEY: owner}) for owner in ("me:x", "them:x"))
        for task_id in ("t1", "t2", "t3"):
            await store.save(Task(id=task_id, context_id="c"), mine)
        assert await store.get("t1", mine) is None
        assert (await store.get("t3", mine)) is not None
        assert await store.get("t3", theirs) is None

    asyncio.run(scenario())
    assert owner_of({}) == ""
    assert owner_of({"authorization": "Bearer k"}) != owner_of({"authorization": "Bearer j"})
    assert "Bearer" not in owner_of({"authorization": "Bearer k"})


def test_header_sets_label_the_reference_and_never_leak_into_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_UNIT_KEY", "s3cret")
    first = ref_from_dict({"a2a": "https://unit.example/x", "headers": {"Authorization": "Bearer ${A2A_UNIT_KEY}"}},
                          "where")
    again = ref_from_dict({"a2a": "a2a+https://unit.example/x", "headers": {"Authorization": "Bearer s3cret"}}, "w")
    other = ref_from_dict({"a2a": "https://unit.example/x", "headers": {"Authorization": "Bearer other"}}, "w")
    plain = ref_from_dict({"a2a": "https://unit.example/x"}, "w")
    assert first == again == "a2a+https://unit.example/x#headers-1"
    assert other == "a2a+https://unit.example/x#headers-2"
    assert plain == "a2a+https://unit.example/x" and a2a_headers(plain) == {}
    assert a2a_headers(first) == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in first + other
    assert a2a_url(first) == "https://unit.example/x"
    assert tool_function_name(first) == tool_function_name(plain) == "__x"


def test_bad_references_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="expected a2a"):
        a2a_url("a2a+grpc://host/x")
    with pytest.raises(ConfigurationError, match="must be the A2A agent's URL"):
        ref_from_dict({"a2a": 3}, "w")
