"""External agents on another server (``remote.py``): a front server whose network calls
``math_guy`` on a second server process, over grpc:// and http://."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neuro_san.client import MAXIMAL, AsyncAgentClient, ChatMessage, MessageType, Unavailable
from neuro_san.client.remote import close_all, remote_agent, split_ref
from neuro_san.core.errors import ConfigurationError, UpstreamUnavailable
from neuro_san.core.messages import ChatRequest
from tests.support.servers import ServerProcess, free_port, start_server
from tests.support.waits import until, wait_until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


def _relay(ref: str) -> dict[str, Any]:
    return {
        "llm_config": {"class": "scripted"},
        "tools": [
            {
                "name": "relay",
                "function": {"description": "Relays arithmetic to a remote math_guy."},
                "instructions": "Ask the remote agent.",
                "tools": [ref],
                "llm_config": {"class": "scripted", "reply": "remote says: {results}"},
                "allow": {
                    "to_downstream": {"sly_data": ["user"]},
                    "from_downstream": {"sly_data": ["equals"], "messages": True},
                    "to_upstream": {"sly_data": ["equals"]},
                },
            }
        ],
    }


@pytest.fixture(scope="module")
def back_server() -> Iterator[ServerProcess]:
    """The server that hosts math_guy, on gRPC and HTTP."""
    with start_server(http=True) as server:
        yield server


@pytest.fixture(scope="module")
def front_server(back_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Networks that call the back server: over gRPC, over HTTP (a sub-folder name), to an
    agent the back server does not have, and to a server that is not there."""
    root = tmp_path_factory.mktemp("front")
    refs = {
        "via_grpc": f"grpc://{back_server.grpc_target}/math_guy",
        "via_http": f"{back_server.http_base}/deep/math_guy",
        "to_nobody": f"grpc://{back_server.grpc_target}/no_such_agent",
        "to_nowhere": f"grpc://127.0.0.1:{free_port()}/math_guy",
    }
    for name, ref in refs.items():
        (root / f"{name}.json").write_text(json.dumps(_relay(ref)))
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps({f"{name}.json": True for name in refs}))
    with start_server(manifest=manifest) as server:
        yield server


def _chat(server: ServerProcess, agent: str, text: str, maximal: bool = False) -> list[ChatMessage]:
    async def main() -> list[ChatMessage]:
        async with AsyncAgentClient.grpc(server.grpc_target) as client:
            stream = client.streaming_chat(agent, text, {"user": "ada"}, filter=MAXIMAL if maximal else 1)
            return await asyncio.wait_for(_collect(stream), 30)

    return asyncio.run(main())


async def _collect(stream: Any) -> list[ChatMessage]:
    return [m async for m in stream]


@pytest.mark.parametrize("agent", ["via_grpc", "via_http"])
def test_external_agent_on_another_server(front_server: ServerProcess, agent: str) -> None:
    messages = _chat(front_server, agent, "6 * 7", maximal=True)
    final = messages[-1]
    assert final.type is MessageType.AGENT_FRAMEWORK
    assert final.text == "remote says: The answer is 42."
    assert final.sly_data == {"equals": 42}  # came back from the remote network, as allowed
    # The remote network's own messages, re-rooted under the relay.
    progress = [m for m in messages if m.type is MessageType.AGENT_PROGRESS]
    assert progress and [o.tool for o in progress[0].origin][0] == "relay"
    assert [o.tool for o in progress[0].origin][-1] == "calculator"


def test_connectivity_shows_the_remote_reference(front_server: ServerProcess, back_server: ServerProcess) -> None:
    async def main() -> Any:
        async with AsyncAgentClient.grpc(front_server.grpc_target) as client:
            return await client.connectivity("via_grpc")

    connectivity = asyncio.run(main())
    ref = f"grpc://{back_server.grpc_target}/math_guy"
    assert [(e.origin, e.display_as) for e in connectivity.entries] == [("relay", "llm_agent"), (ref, "external_agent")]


@pytest.mark.parametrize(
    ("agent", "expected"),
    [("to_nobody", "no agent 'no_such_agent' there"), ("to_nowhere", "cannot reach the gRPC server")],
)
def test_remote_failures_are_upstream_unavailable(front_server: ServerProcess, agent: str, expected: str) -> None:
    with pytest.raises(Unavailable) as info:
        _chat(front_server, agent, "1 + 1")
    assert "external agent grpc://" in info.value.message
    assert expected in info.value.message


def test_remote_agent_directly(back_server: ServerProcess) -> None:
    """The RemoteAgent protocol itself: function(), chat(), shared clients, and errors."""

    async def main() -> None:
        over_grpc = remote_agent(f"grpc://{back_server.grpc_target}/deep/math_guy")
        over_http = remote_agent(f"{back_server.http_base}/math_guy")
        assert remote_agent(f"grpc://{back_server.grpc_target}/echo").client is over_grpc.client  # type: ignore[attr-defined]
        for agent in (over_grpc, over_http):
            function = await agent.function()
            assert function["description"] == "I do arithmetic."
            messages = [m async for m in agent.chat(ChatRequest(user_text="3 * 3"))]
            assert messages[-1] is not None and messages[-1].text == "The answer is 9."
        missing = remote_agent(f"{back_server.http_base}/no_such_agent")
        with pytest.raises(UpstreamUnavailable, match="no agent 'no_such_agent' there"):
            await missing.function()
        with pytest.raises(UpstreamUnavailable, match="no agent 'no_such_agent' there"):
            [m async for m in missing.chat(ChatRequest(user_text="hi"))]
        await close_all()

    asyncio.run(main())


def test_bad_references_are_configuration_errors() -> None:
    assert split_ref("grpc://h:1/deep/math_guy") == ("grpc://h:1", "deep/math_guy")
    assert split_ref("https://example.com/a%20b") == ("https://example.com", "a b")
    for ref in ("grpc://h:1", "ftp://h/x", "math_guy"):
        with pytest.raises(ConfigurationError):
            split_ref(ref)


def test_cancelling_the_caller_cancels_the_remote_call(tmp_path: Path) -> None:
    """The front server's client goes away: the remote sleeper stops, on the back server."""
    from tests.client.test_client_library import write_slow_networks

    manifest, tools, marks = write_slow_networks(tmp_path / "back")
    env = {"SLEEPER_MARKS": str(marks)}
    with start_server(manifest=manifest, env=env, extra_args=["--tool-path", str(tools)]) as back:
        front_root = tmp_path / "front"
        front_root.mkdir()
        network = _relay(f"grpc://{back.grpc_target}/sleepy")
        (front_root / "relay.json").write_text(json.dumps(network))
        (front_root / "manifest.json").write_text(json.dumps({"relay.json": True}))
        with start_server(manifest=front_root / "manifest.json") as front:

            async def main() -> None:
                async with AsyncAgentClient.grpc(front.grpc_target) as client:
                    task = asyncio.create_task(_collect(client.streaming_chat("relay", "6.5", filter=MAXIMAL)))
                    assert await until(lambda: (marks / "6.5.started").exists() or task.done())
                    task.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await task

            asyncio.run(main())
            wait_until(lambda: (marks / "6.5.cancelled").exists())
            assert (marks / "6.5.started").exists()
            assert (marks / "6.5.cancelled").exists(), "the remote call outlived its caller"
