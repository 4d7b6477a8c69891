"""Our networks as A2A agents, driven by the official a2a-sdk client against a real
``neuro-san serve`` (cards, send, stream, continuation, cancel, errors)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from tests.a2a_support import a2a_client, as_dict, final_text, send, user_message
from tests.fakes.fake_llm import Reply
from tests.support.fake_thread import fake_backed_server
from tests.support.servers import ServerProcess, start_server
from tests.support.waits import until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


async def _collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


def _chat_context_texts(metadata: dict[str, Any]) -> list[str]:
    histories = metadata["neuro_san"]["chat_context"]["chat_histories"]
    return [m.get("text", "") for h in histories for m in h["messages"]]


def test_cards_describe_every_public_network(server: ServerProcess) -> None:
    base = server.http_base
    directory = httpx.get(f"{base}/.well-known/agent-card.json", timeout=10).json()
    assert {"math_guy", "hello_world"} <= {s["id"] for s in directory["skills"]}
    card = httpx.get(f"{base}/a2a/math_guy/.well-known/agent-card.json", timeout=10).json()
    assert card["name"] == "math_guy"
    assert card["supportedInterfaces"][0]["url"] == f"{base}/a2a/math_guy"
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
    assert "securitySchemes" not in card  # no API keys on this server
    legacy = httpx.get(f"{base}/a2a/math_guy/.well-known/agent.json", timeout=10).json()  # 0.3 clients' path
    assert legacy["url"] == f"{base}/a2a/math_guy" and legacy["preferredTransport"] == "JSONRPC"
    missing = httpx.get(f"{base}/a2a/nobody/.well-known/agent-card.json", timeout=10)
    assert missing.status_code == 404
    # deep/math_guy is private (public: false): over A2A it is not there without a key naming it.
    private = httpx.get(f"{base}/a2a/deep/math_guy/.well-known/agent-card.json", timeout=10)
    assert private.status_code == 404


def test_send_a_message_to_math_guy_and_get_42(server: ServerProcess) -> None:
    async def scenario() -> None:
        async with a2a_client(f"{server.http_base}/a2a/math_guy", streaming=False) as client:
            events = await send(client, user_message("6*7"))
        assert len(events) == 1
        task = events[0].task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert "42" in task.artifacts[0].parts[0].text
        extra = as_dict(task.artifacts[0].metadata)["neuro_san"]
        assert extra["sly_data"] == {"equals": 42}  # what allow.to_upstream lets out

    asyncio.run(scenario())


def test_stream_hello_world_working_then_completed_with_an_artifact(server: ServerProcess) -> None:
    async def scenario() -> None:
        async with a2a_client(f"{server.http_base}/a2a/hello_world", streaming=True) as client:
            events = await send(client, user_message("hello", neuro_san={"thinking": True}))
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds[0] == "task"
        states = [e.status_update.status.state for e in events if e.HasField("status_update")]
        assert states[0] == TaskState.TASK_STATE_WORKING
        assert states[-1] == TaskState.TASK_STATE_COMPLETED
        thinking = [e for e in events if e.HasField("status_update") and e.status_update.status.message.parts]
        assert len(thinking) >= 2  # intermediate messages asked for, plus the final one
        updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
        # The answer streams as chunks of one artifact (append after the first), then the
        # whole answer replaces them in the last chunk.
        *chunks, last = updates
        assert chunks and [u.append for u in chunks] == [False] + [True] * (len(chunks) - 1)
        assert not any(u.last_chunk for u in chunks) and last.last_chunk and not last.append
        assert {u.artifact.artifact_id for u in updates} == {last.artifact.artifact_id}
        assert "".join(u.artifact.parts[0].text for u in chunks) == last.artifact.parts[0].text
        assert last.artifact.parts[0].text.startswith("Announcement:")
        assert kinds.index("artifact_update") < len(kinds) - 1  # the artifact comes before the final status

    asyncio.run(scenario())


def test_a_conversation_continues_by_context_id_or_by_returned_metadata(server: ServerProcess) -> None:
    async def scenario() -> None:
        async with a2a_client(f"{server.http_base}/a2a/math_guy", streaming=False) as client:
            first = (await send(client, user_message("6*7")))[0].task
            by_id = (await send(client, user_message("1+1", context_id=first.context_id)))[0].task
            returned = as_dict(first.artifacts[0].metadata)["neuro_san"]
            by_metadata = (await send(client, user_message(
                "2+2", neuro_san={"chat_context": returned["chat_context"]})))[0].task
            fresh = (await send(client, user_message("3+3")))[0].task
        assert by_id.context_id == first.context_id
        assert "6*7" in _chat_context_texts(as_dict(by_id.artifacts[0].metadata))
        assert by_metadata.context_id != first.context_id
        assert "6*7" in _chat_context_texts(as_dict(by_metadata.artifacts[0].metadata))
        assert "6*7" not in _chat_context_texts(as_dict(fresh.artifacts[0].metadata))

    asyncio.run(scenario())


def test_errors_for_unknown_agent_bad_method_and_malformed_params(server: ServerProcess) -> None:
    base = server.http_base
    unknown = httpx.post(f"{base}/a2a/nobody", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32600
    bad_method = httpx.post(f"{base}/a2a/math_guy", json={"jsonrpc": "2.0", "id": 2, "method": "nope"})
    assert bad_method.json()["error"]["code"] == -32601
    bad_params = httpx.post(f"{base}/a2a/math_guy", json={
        "jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": 7}})
    assert bad_params.json()["error"]["code"] == -32602
    v03 = {"jsonrpc": "2.0", "id": 4, "method": "message/send",
           "params": {"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "6*7"}]}}}
    mixed = httpx.post(f"{base}/a2a/math_guy", json=v03, headers={"A2A-Version": "1.0"}, timeout=30)
    assert mixed.json()["error"]["code"] == -32600
    old_client = httpx.post(f"{base}/a2a/math_guy", json=v03, timeout=30).json()  # a 0.3 client sends no 1.0 header
    assert old_client["result"]["status"]["state"] == "completed"
    assert "42" in old_client["result"]["artifacts"][0]["parts"][0]["text"]
    not_json = httpx.post(f"{base}/a2a/math_guy", content=b"{", headers={"content-type": "application/json"})
    assert not_json.json()["error"]["code"] == -32700

    async def scenario() -> None:
        async with a2a_client(f"{base}/a2a/math_guy", streaming=False) as client:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
            task = (await send(client, user_message("6*7")))[0].task
        async with a2a_client(f"{base}/a2a/echo", streaming=False) as elsewhere:
            with pytest.raises(TaskNotFoundError):  # a task belongs to the network that ran it
                await elsewhere.get_task(GetTaskRequest(id=task.id))
        async with a2a_client(f"{base}/a2a/math_guy", streaming=False) as client:
            with pytest.raises(InvalidParamsError):
                await send(client, user_message("1", neuro_san={"chat_context": "not an object"}))

    asyncio.run(scenario())


def test_cancel_a_slow_chat_closes_its_llm_connection() -> None:
    with fake_backed_server() as rig:
        rig.fake.enqueue(Reply.stall(60))

        async def scenario() -> None:
            url = f"{rig.server.http_base}/a2a/echo"
            async with a2a_client(url, streaming=True) as client, a2a_client(url, streaming=False) as other, \
                    a2a_client(url, streaming=True) as watcher:
                stream = client.send_message(SendMessageRequest(
                    message=user_message("take your time")))
                task_id = ""
                async for event in stream:
                    if event.HasField("task"):
                        task_id = event.task.id
                    if event.HasField("status_update"):
                        break  # working: the chat has started
                await until(lambda: rig.fake.open_connections > 0)
                assert rig.fake.open_connections == 1, "the LLM call never started"
                subscription = watcher.subscribe(SubscribeToTaskRequest(id=task_id))
                # The handler yields the task, then taps the task's events with no I/O between:
                # once the task has crossed the network to us, the subscription is in place.
                seen = [await asyncio.wait_for(anext(subscription), 10)]
                cancelled = await other.cancel_task(CancelTaskRequest(id=task_id))
                assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
                seen += await asyncio.wait_for(_collect(subscription), 10)
                assert seen[0].task.id == task_id  # resubscribe starts with the task as it is
                assert seen[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
                await stream.aclose()
                got = await other.get_task(GetTaskRequest(id=task_id))
                assert got.status.state == TaskState.TASK_STATE_CANCELED
            await until(lambda: rig.fake.open_connections == 0)
            assert rig.fake.open_connections == 0
            assert rig.fake.handlers_cancelled == rig.fake.request_count == 1

        asyncio.run(scenario())


def test_with_api_keys_cards_declare_them_and_calls_need_one() -> None:
    with start_server(http=True, env={"AGENT_API_KEYS": "a2a-key,other-key"}) as secured:
        card_url = f"{secured.http_base}/a2a/math_guy/.well-known/agent-card.json"
        # Cards need no key (they say how to authenticate: the A2A spec's intent); everything else does.
        anonymous = httpx.get(card_url, timeout=10)
        assert anonymous.status_code == 200
        card = anonymous.json()
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert httpx.get(card_url, headers={"Authorization": "Bearer a2a-key"}, timeout=10).json() == card
        assert httpx.get(card_url, headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
        assert httpx.get(f"{secured.http_base}/api/v1/list", timeout=10).status_code == 401
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
        assert httpx.post(f"{secured.http_base}/a2a/math_guy", json=body, timeout=10).status_code == 401

        async def scenario() -> None:
            url = f"{secured.http_base}/a2a/math_guy"
            async with a2a_client(url, streaming=False, headers={"Authorization": "Bearer a2a-key"}) as client:
                task = (await send(client, user_message("6*7")))[0].task
            assert "42" in task.artifacts[0].parts[0].text
            async with a2a_client(url, streaming=False, headers={"Authorization": "Bearer other-key"}) as other:
                theirs = (await send(other, user_message("1+1", context_id=task.context_id)))[0].task
                with pytest.raises(TaskNotFoundError):  # tasks are scoped to the key that made them
                    await other.get_task(GetTaskRequest(id=task.id))
            # Another key holder who learns the contextId does not continue the conversation.
            assert "6*7" not in _chat_context_texts(as_dict(theirs.artifacts[0].metadata))

        asyncio.run(scenario())


def test_the_rest_binding_and_the_tenant_endpoint_serve_each_network(server: ServerProcess) -> None:
    base = server.http_base
    card = httpx.get(f"{base}/a2a/math_guy/.well-known/agent-card.json", timeout=10).json()
    bindings = [(i["protocolBinding"], i["url"], i["protocolVersion"]) for i in card["supportedInterfaces"]]
    assert bindings[:2] == [("JSONRPC", f"{base}/a2a/math_guy", "1.0"),
                            ("HTTP+JSON", f"{base}/a2a/math_guy/rest", "1.0")]
    directory = httpx.get(f"{base}/.well-known/agent-card.json", timeout=10).json()
    # One interface per binding for every network, none preferred: the request names its network
    # (the gRPC one: tests/gateway/a2a/test_a2a_grpc.py).
    assert [(i["url"], i.get("tenant", "")) for i in directory["supportedInterfaces"]] == [
        (f"{base}/a2a", ""), (server.grpc_target, "")]
    assert httpx.get(f"{base}/.well-known/jwks.json", timeout=10).status_code == 404  # no signing key here

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            config = ClientConfig(streaming=False, httpx_client=http, supported_protocol_bindings=["HTTP+JSON"])
            client = await create_client(f"{base}/a2a/math_guy", config)
            try:
                events = await send(client, user_message("6*7"))
                task = events[-1].task
                assert task.status.state == TaskState.TASK_STATE_COMPLETED and "42" in final_text(events)
                assert (await client.get_task(GetTaskRequest(id=task.id))).id == task.id
            finally:
                await client.close()
            # The same task over JSON-RPC: one store behind both bindings.
            async with a2a_client(f"{base}/a2a/math_guy", streaming=False) as jsonrpc:
                same = await jsonrpc.get_task(GetTaskRequest(id=task.id))
                assert same.status.state == TaskState.TASK_STATE_COMPLETED
            missing = await http.get(f"{base}/a2a/nobody/rest/tasks/x")
            assert missing.status_code == 404
            unknown_task = await http.get(f"{base}/a2a/math_guy/rest/tasks/not-a-task")
            assert unknown_task.status_code == 404
            request = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task.id}}
            named = await http.post(f"{base}/a2a", json={**request, "params": {"id": task.id, "tenant": "math_guy"}},
                                    headers={"A2A-Version": "1.0"})
            assert named.json()["result"]["id"] == task.id
            unnamed = (await http.post(f"{base}/a2a", json=request, headers={"A2A-Version": "1.0"})).json()
            assert unnamed["error"]["code"] == -32602 and "tenant" in unnamed["error"]["message"]

    asyncio.run(scenario())
