"""MCP's ``tools/call`` is one service call in the steady state.

A real in-process server (its networks answering through the streaming provider fake over
real HTTP), the real in-process invoker and the real agents facade, with each of the
invoker's callables counted: ``tools/list`` is one DirectoryService/List; every later
``tools/call`` of a listed tool is one StreamingChat and nothing else; a kept listing that
names a network the server no longer serves (the manifest reloaded) is listed once more,
and the tool is then unknown, as it would have been with a fresh listing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from neuro_san.api.grpc import directory_pb2

from gateway.agents.invoked import InvokedAgents
from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from gateway.mcp.calls import ToolCaller
from gateway.mcp.dispatch import Call, Dispatcher
from gateway.mcp.protocol import INVALID_PARAMS, JsonRpcError
from gateway.mcp.tools import ToolCatalog
from gateway.transcoder.frontend import default_services
from neuro_san.service.server import AgentServer, ServerConfig
from tests.fakes.stream_fake import StreamFake

pytestmark = pytest.mark.slow


class Counting:
    """An invoker's callable, counting the calls made through it."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner(*args, **kwargs)


def _network(config: dict[str, Any], description: str) -> dict[str, Any]:
    return {"llm_config": config, "tools": [
        {"name": "front", "function": {"description": description}, "instructions": "Answer."},
    ]}


def _write(tmp_path: Path, config: dict[str, Any], names: list[str]) -> Path:
    for name in ("calc", "poet"):
        (tmp_path / f"{name}.json").write_text(json.dumps(_network(config, f"The {name}.")))
    (tmp_path / "manifest.json").write_text(json.dumps({f"{name}.json": True for name in names}))
    return tmp_path / "manifest.json"


def test_tools_call_is_one_chat_and_a_stale_listing_is_asked_once_more(tmp_path: Path) -> None:
    async def main() -> None:
        async with StreamFake(awkward=False) as fake:
            config = fake.llm_config("openai", max_attempts=1)
            manifest = _write(tmp_path, config, ["calc", "poet"])
            server = AgentServer(ServerConfig(host="127.0.0.1", port=0, manifest_paths=[manifest]))
            await server.start()
            invoker = InProcessInvoker(server.handlers.generic, server.health, server.config.max_message_bytes)
            methods = methods_of([*default_services(), directory_pb2.DESCRIPTOR.services_by_name["DirectoryService"]])
            counted = {path.rsplit("/", 2)[-2].rsplit(".", 1)[-1] + "/" + path.rsplit("/", 1)[-1]:
                       Counting(invoker.callable_for(ref)) for path, ref in methods.items()}
            agents = InvokedAgents(counted["AgentService/StreamingChat"], 20.0,
                                   directory_list=counted["DirectoryService/List"],
                                   function=counted["AgentService/Function"])
            dispatcher = Dispatcher(ToolCatalog(agents), ToolCaller(agents), "test")

            def calls() -> dict[str, int]:
                return {name: c.calls for name, c in counted.items() if c.calls}

            try:
                listed = await dispatcher.answer(Call("tools/list", {}, []))
                assert {tool["name"]: tool["description"] for tool in listed["tools"]} == {
                    "calc": "The calc.", "poet": "The poet."}
                assert calls() == {"DirectoryService/List": 1}, "tools/list is one call, descriptions included"

                for turn in range(1, 4):
                    params = {"name": "calc", "arguments": {"user_message": {"text": f"sum {turn}"}}}
                    result = await dispatcher.answer(Call("tools/call", params, []))
                    assert result["isError"] is False, result
                    assert f"sum {turn}" in result["content"][0]["text"]  # the fake echoes the user
                    assert calls() == {"DirectoryService/List": 1, "AgentService/StreamingChat": turn}

                # The manifest drops calc; the kept listing still names it: its chat answers
                # "not served here", the catalog lists once more, and the tool is unknown.
                _write(tmp_path, config, ["poet"])
                server.registry.reload()
                with pytest.raises(JsonRpcError) as unknown:
                    await dispatcher.answer(Call("tools/call", {"name": "calc", "arguments": {
                        "user_message": {"text": "sum"}}}, []))
                assert unknown.value.code == INVALID_PARAMS and "Unknown tool: calc" in unknown.value.message
                assert calls() == {"DirectoryService/List": 2, "AgentService/StreamingChat": 4,
                                   "AgentService/Function": 1}
            finally:
                await invoker.close()
                await server.stop(0.5)

    asyncio.run(asyncio.wait_for(main(), 60))
