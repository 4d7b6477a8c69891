"""DirectoryService/List, the front-ends' directory, against a real server in this process.

Over a real gRPC channel (a raw client) and through the in-process invoker (the gateway of
``neuro-san serve``): each entry carries the MCP tool name and the front man's function; who
sees what is Concierge's rule (a private network only for a key that names it); the public
directory (``public_directory``) answers without credentials only to the server's own
gateway, and a raw client that sets it is answered as one that did not; the version follows
the listing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from neuro_san.api.grpc import directory_pb2

from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from neuro_san.core.access import AccessPolicy
from neuro_san.service.server import AgentServer, ServerConfig

pytestmark = pytest.mark.slow

SERVICE = directory_pb2.DESCRIPTOR.services_by_name["DirectoryService"]
LLM = {"class": "openai", "model_name": "m", "openai_api_base": "http://127.0.0.1:9/v1", "openai_api_key": "k"}


def _manifest(tmp_path: Path) -> Path:
    for name in ("calc", "poet", "quiet"):
        network = {"llm_config": LLM, "tools": [
            {"name": "front", "instructions": "Answer.",
             "function": {"description": f"The {name}.", "parameters": {"type": "object", "properties": {}}}},
        ]}
        (tmp_path / f"{name}.json").write_text(json.dumps(network))
    manifest = {"calc.json": {"mcp": {"name": "calculator"}}, "poet.json": {"mcp": False},
                "quiet.json": {"public": False, "mcp": True}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    keys = {"keys": [{"key": "every-key", "agents": ["*", "quiet"]}, {"key": "public-key", "agents": ["*"]}]}
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    return tmp_path / "manifest.json"


Lister = Callable[..., Awaitable[Any]]


def _run(tmp_path: Path, body: Callable[[AgentServer, Lister, Lister], Awaitable[None]]) -> None:
    async def main() -> None:
        manifest = _manifest(tmp_path)
        access = AccessPolicy.from_env({"AGENT_API_KEYS_FILE": str(tmp_path / "keys.json")})
        server = AgentServer(ServerConfig(host="127.0.0.1", port=0, manifest_paths=[manifest], access=access))
        await server.start()
        invoker = InProcessInvoker(server.handlers.generic, server.health, server.config.max_message_bytes)
        ref = methods_of([SERVICE])[f"/{SERVICE.full_name}/List"]
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        raw = channel.unary_unary(ref.grpc_path, request_serializer=ref.request_class.SerializeToString,
                                  response_deserializer=ref.response_class.FromString)
        try:
            await body(server, raw, invoker.callable_for(ref))
        finally:
            await channel.close()
            await invoker.close()
            await server.stop(0.5)

    asyncio.run(asyncio.wait_for(main(), 60))


def _key(key: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {key}")]


def test_entries_carry_the_mcp_tool_and_the_function_and_follow_the_key(tmp_path: Path) -> None:
    async def body(_server: AgentServer, raw: Lister, _local: Lister) -> None:
        every = await raw(directory_pb2.DirectoryRequest(), metadata=_key("every-key"), timeout=10)
        entries = {e.agent_name: e for e in every.entries}
        assert list(entries) == ["calc", "poet", "quiet"]
        assert {name: e.mcp_tool for name, e in entries.items()} == {"calc": "calculator", "poet": "", "quiet": "quiet"}
        assert entries["calc"].function.description == "The calc."
        assert entries["calc"].function.HasField("parameters")
        public = await raw(directory_pb2.DirectoryRequest(), metadata=_key("public-key"), timeout=10)
        assert [e.agent_name for e in public.entries] == ["calc", "poet"], "a private network: only for its key"
        assert public.version != every.version, "another listing, another version"
        again = await raw(directory_pb2.DirectoryRequest(), metadata=_key("public-key"), timeout=10)
        assert again.version == public.version
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await raw(directory_pb2.DirectoryRequest(), metadata=[], timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

    _run(tmp_path, body)


def test_the_public_directory_is_believed_from_the_gateway_only(tmp_path: Path) -> None:
    async def body(_server: AgentServer, raw: Lister, local: Lister) -> None:
        asked = directory_pb2.DirectoryRequest(public_directory=True)
        listed = await local(asked, metadata=[], timeout=10)
        assert [e.agent_name for e in listed.entries] == ["calc", "poet"], "public networks, no credentials"
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await raw(asked, metadata=[], timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, "a raw client is an ordinary caller"
        with_key = await raw(asked, metadata=_key("every-key"), timeout=10)
        assert [e.agent_name for e in with_key.entries] == ["calc", "poet", "quiet"], "the key's listing, as without"

    _run(tmp_path, body)
