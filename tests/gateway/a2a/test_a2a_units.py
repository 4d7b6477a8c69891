"""The A2A pieces that keep state or parse configuration, on their own."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.types import Artifact, Task, TaskState, TaskStatus

from gateway.a2a.switch import SDK_TRACING_ENV
from gateway.a2a.tasks import OWNER_KEY, BoundedTaskStore, owner_of
from gateway.state.conversations import ConversationStore
from gateway.state.memory import LruDocuments, MemoryState
from neuro_san.core.errors import ConfigurationError
from neuro_san.network.a2a_refs import a2a_headers, a2a_url, ref_from_dict
from neuro_san.runtime.tool_binding import tool_function_name


def test_the_context_memory_is_bounded_and_expires() -> None:
    now = [0.0]
    store = LruDocuments(max_entries=2, clock=lambda: now[0])
    store.put("a", {"n": 1}, 10)
    store.put("b", {"n": 2}, 10)
    assert store.get("a") == {"n": 1}  # a is now the most recently used
    store.put("c", {"n": 3}, 10)
    assert store.get("b") is None and store.get("a") == {"n": 1} and len(store) == 2
    now[0] = 10.0
    assert store.get("a") is None and store.get("c") is None


def test_the_conversation_store_keeps_contexts_in_the_shared_state() -> None:
    async def scenario() -> None:
        state = MemoryState()
        store, other = ConversationStore(state), ConversationStore(state)
        await store.put("owner:ctx", {"chat_histories": []})
        assert await other.get("owner:ctx") == {"chat_histories": []}
        assert await other.get("someone-else:ctx") is None

    asyncio.run(scenario())


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


def test_an_ended_task_in_the_task_store_is_final() -> None:
    """A write to an ended task is refused as a conflict (which the SDK answers by reloading
    it), so a cancel racing the chat's own end cannot turn COMPLETED into CANCELED, nor the
    chat's last events a CANCELED task into COMPLETED; another owner's task is untouched."""
    async def scenario() -> None:
        store = BoundedTaskStore()
        mine, theirs = (ServerCallContext(state={OWNER_KEY: owner}) for owner in ("me:x", "them:x"))
        await store.save(Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING)), mine)
        await store.save(Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_CANCELED)), mine)
        for late in (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED):
            with pytest.raises(ConcurrentTaskModificationError):
                await store.save(Task(id="t", context_id="c", status=TaskStatus(state=late),
                                      artifacts=[Artifact(artifact_id="a")]), mine)
        kept = await store.get("t", mine)
        assert kept is not None and kept.status.state == TaskState.TASK_STATE_CANCELED and not kept.artifacts
        await store.save(Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING)), theirs)

    asyncio.run(scenario())


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


@pytest.mark.parametrize("url", [
    "http://localhost:8080/hook",  # a name resolving to loopback
    "http://127.0.0.1/hook", "http://169.254.169.254/latest/meta-data", "http://10.1.2.3/", "http://172.16.0.1/",
    "http://192.168.0.10/", "http://100.64.0.1/", "http://[::1]/", "http://[fe80::1]/", "http://0.0.0.0/",
    "http://[::ffff:10.0.0.1]/", "file:///etc/passwd", "http:///nohost",
])
def test_push_urls_inside_the_network_are_refused(url: str) -> None:
    from gateway.a2a.push_policy import PushUrlPolicy

    assert asyncio.run(PushUrlPolicy().why_refused(url)) is not None


def test_push_url_ranges_can_be_allowed_and_bad_ones_are_refused() -> None:
    from gateway.a2a.push_policy import PushUrlPolicy, allowed_networks

    allowed = allowed_networks({"AGENT_A2A_PUSH_ALLOWED_NETWORKS": "10.1.0.0/16, 127.0.0.1/32"})
    policy = PushUrlPolicy(allowed)
    assert asyncio.run(policy.why_refused("http://10.1.2.3:9000/hook")) is None
    assert asyncio.run(policy.why_refused("http://127.0.0.1/hook")) is None
    assert "internal address" in str(asyncio.run(policy.why_refused("http://10.2.0.1/hook")))
    assert asyncio.run(PushUrlPolicy().why_refused("http://93.184.215.14/hook")) is None  # public: fine
    with pytest.raises(ValueError, match="AGENT_A2A_PUSH_ALLOWED_NETWORKS"):
        allowed_networks({"AGENT_A2A_PUSH_ALLOWED_NETWORKS": "10.0.0.0/99"})


@pytest.mark.parametrize("url", [
    "http://[64:ff9b::7f00:1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b:1::808:808]/",
    "http://[2002:7f00:1::]/", "http://[2002:a9fe:a9fe::]/", "http://[::7f00:1]/", "http://[::ffff:127.0.0.1]/",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo, client 127.0.0.1 (inverted)
    "http://224.0.0.1/", "http://239.255.255.250/", "http://[ff02::1]/", "http://[ff0e::1]/",
])
def test_push_urls_embedding_or_multicast_are_refused(url: str) -> None:
    from gateway.a2a.push_policy import PushUrlPolicy

    assert asyncio.run(PushUrlPolicy().why_refused(url)) is not None


def test_push_url_resolution_answers_the_checked_address() -> None:
    from gateway.a2a.push_policy import PushUrlPolicy, Resolved

    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    resolved = asyncio.run(PushUrlPolicy(resolver=resolver).resolve("http://hook.example/x"))
    assert isinstance(resolved, Resolved) and resolved.address == "93.184.215.14"


def _sdk_spans_on(preset: str | None, ours: bool) -> bool:
    """Whether a fresh interpreter's a2a-sdk opens spans after :func:`sdk_spans_follow`
    (the SDK reads its variable once, at import: only a new process shows it)."""
    env = {k: v for k, v in os.environ.items() if k != SDK_TRACING_ENV}
    if preset is not None:
        env[SDK_TRACING_ENV] = preset
    code = (f"from gateway.a2a.switch import sdk_spans_follow; sdk_spans_follow({ours!r}); "
            "import a2a.utils.telemetry as t; print(t.otel_installed and t.otel_enabled)")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.strip() == "True"


def test_the_sdk_opens_spans_only_when_ours_are_on_unless_the_operator_says() -> None:
    assert _sdk_spans_on(None, ours=False) is False
    assert _sdk_spans_on(None, ours=True) is True
    assert _sdk_spans_on("true", ours=False) is True  # the operator's own value wins
