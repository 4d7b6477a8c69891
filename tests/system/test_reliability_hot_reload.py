"""Hot reload on a real server (``AGENT_MANIFEST_UPDATE_PERIOD_SECONDS`` = 0.2): added,
changed and removed network files are picked up without a restart, a chat in flight
finishes on the version it started with, and a broken edit keeps the last good version.

The network's instructions carry a version (``front v1``, ``helper v1``); the fake LLM
sees them in each request's system message, which tells which version served a call.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, RecordedRequest, Reply
from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast

PERIOD = 0.2
#: Long enough for several reload periods to pass while the chat is in flight.
IN_FLIGHT_STALL = 2.0


def network(version: str) -> dict[str, Any]:
    return {
        "llm_config": {"class": "scripted"},
        "tools": [
            {
                "name": "front",
                "function": {"description": "The front man."},
                "instructions": f"front {version}",
                "tools": ["helper"],
            },
            {
                "name": "helper",
                "function": {
                    "description": "Helps.",
                    "parameters": {
                        "type": "object",
                        "properties": {"topic": {"type": "string"}},
                        "required": ["topic"],
                    },
                },
                "instructions": f"helper {version}",
            },
        ],
    }


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def system_of(request: RecordedRequest) -> str:
    return next((m.get("content", "") for m in request.messages if m.get("role") == "system"), "")


def rule(request: RecordedRequest) -> Reply | None:
    """``inflight…`` chats: the front man stalls, then calls its helper; else echo."""
    has_tool_result = any(m.get("role") == "tool" for m in request.messages)
    if system_of(request).startswith("front") and not has_tool_result:
        if request.last_input_text().startswith("inflight"):
            return Reply.stall(IN_FLIGHT_STALL, then=Reply.calls(FakeToolCall("helper", {"topic": "inflight-topic"})))
    return None


def chat(target: str, agent: str, text: str) -> load.ChatOutcome:
    async def one() -> load.ChatOutcome:
        async with grpc.aio.insecure_channel(target) as channel:
            return await load.grpc_chat(channel, agent, text, timeout=15)

    return asyncio.run(one())


def versions_seen(fake: FakeLlmServer, marker: str) -> set[str]:
    """The versions in the system messages of every LLM request of the chat ``marker``."""
    found = set()
    for request in list(fake.requests):
        if marker in json.dumps(request.messages):
            found.add(system_of(request).split()[-1])
    return found


def test_added_changed_removed_and_broken_networks_without_a_restart(tmp_path: Path) -> None:
    alpha, beta, manifest = tmp_path / "alpha.json", tmp_path / "beta.json", tmp_path / "manifest.json"
    write_atomically(alpha, json.dumps(network("v1")))
    write_atomically(manifest, json.dumps({"alpha.json": True}))
    env = {"AGENT_MANIFEST_UPDATE_PERIOD_SECONDS": str(PERIOD)}
    with FakeInThread(rule=rule) as fake:
        with start_server(manifest=manifest, env={**override_env(fake), **env}) as server:
            target = server.grpc_target
            probes = iter(range(1000))

            def serves(agent: str, version: str) -> bool:
                marker = f"probe-{next(probes)}"
                outcome = chat(target, agent, marker)
                return outcome.ok and versions_seen(fake, marker) == {version}

            assert serves("alpha", "v1")

            # A chat in flight while its network changes, and a network is added.
            results: list[load.ChatOutcome] = []
            in_flight = threading.Thread(target=lambda: results.append(chat(target, "alpha", "inflight-1")))
            in_flight.start()
            assert load.wait_until(lambda: versions_seen(fake, "inflight-1") == {"v1"}, 5)
            write_atomically(alpha, json.dumps(network("v2")))
            write_atomically(beta, json.dumps(network("b1")))
            write_atomically(manifest, json.dumps({"alpha.json": True, "beta.json": True}))
            assert load.wait_until(lambda: serves("alpha", "v2"), 5), "the change was not picked up"
            assert load.wait_until(lambda: serves("beta", "b1"), 5), "the added network was not picked up"
            assert in_flight.is_alive(), "the in-flight chat ended before the reload: the test proves nothing"
            in_flight.join(15)
            assert results and results[0].ok, results
            # Its helper call and its second front-man turn ran after the reload, on v1.
            front_calls = [r for r in fake.requests if "inflight-1" in json.dumps(r.messages)]
            helper_calls = [
                r
                for r in fake.requests
                if system_of(r).startswith("helper") and "inflight-topic" in json.dumps(r.messages)
            ]
            assert (len(front_calls), len(helper_calls)) == (2, 1)
            assert versions_seen(fake, "inflight-1") == {"v1"}, versions_seen(fake, "inflight-1")
            assert versions_seen(fake, "inflight-topic") == {"v1"}

            # A broken edit keeps the last good version serving, and is logged.
            write_atomically(alpha, '{"tools": [ this is not json')
            assert load.wait_until(lambda: "alpha.json" in server.log() and "not loaded" in server.log(), 5)
            time.sleep(3 * PERIOD)  # the behaviour under test: reloads come and go, v2 stays
            assert serves("alpha", "v2")

            # Fixed again: the new version serves.
            write_atomically(alpha, json.dumps(network("v3")))
            assert load.wait_until(lambda: serves("alpha", "v3"), 5)

            # Removed from the manifest (and from disk): gone, the others untouched.
            write_atomically(manifest, json.dumps({"alpha.json": True}))
            beta.unlink()
            assert load.wait_until(lambda: chat(target, "beta", "gone?").code == "NOT_FOUND", 5)
            assert serves("alpha", "v3")
            assert server.process.poll() is None
