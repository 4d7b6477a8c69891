"""A real server for the OpenAI front-end's tests: an in-process AgentServer whose
networks call the streaming provider fake (tests/fakes/stream_fake.py) over real HTTP,
and the HTTP port as ``neuro-san serve`` composes it (every front-end, the in-process
invoker), on loopback. The tests talk to it with OpenAI's own SDK."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway import GatewayConfig
from gateway.composition import protocol_frontends, start_gateway
from gateway.invokers.inprocess import InProcessInvoker
from neuro_san.core.access import AccessPolicy
from neuro_san.core.rate_limits import CallerLimits
from neuro_san.service.server import AgentServer, ServerConfig
from tests.fakes.stream_fake import StreamFake
from tests.support.servers import free_port

ANSWER = "The answer is forty two, as everybody knows by now."
KEY = "openai-test-key-0123456789"


def front(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "function": {"description": f"{name} answers."}, "instructions": "Answer.", **extra}


def networks(folder: Path, config: dict[str, Any], dead_config: dict[str, Any]) -> Path:
    """talker (public), secret (private), keeper (lets sly_data ``ticket`` out), broken
    (its provider is down), deep (a front man that calls a helper)."""
    files = {
        "talker.json": {"llm_config": config, "tools": [front("front")]},
        "secret.json": {"llm_config": config, "tools": [front("hidden")]},
        "keeper.json": {"llm_config": config,
                        "tools": [front("keeper", allow={"to_upstream": {"sly_data": ["ticket"]}})]},
        "broken.json": {"llm_config": dead_config, "tools": [front("down")]},
        "deep.json": {"llm_config": config, "tools": [
            front("boss", tools=["helper"]),
            {"name": "helper", "instructions": "Help.", "function": {
                "description": "Helps.",
                "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}},
        ]},
    }
    for name, document in files.items():
        (folder / name).write_text(json.dumps(document))
    manifest = {name: True for name in files} | {"secret.json": {"serve": True, "public": False}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder / "manifest.json"


@dataclass
class Rig:
    fake: StreamFake
    base: str
    server: AgentServer

    @property
    def v1(self) -> str:
        return f"{self.base}/v1"


@contextlib.asynccontextmanager
async def served(
    folder: Path, *, pace: float = 0.0, keys: str = "", chat_context_key: bytes | None = None,
    limits: CallerLimits | None = None, env: dict[str, str] | None = None, config: GatewayConfig | None = None,
    keys_file: Path | None = None, via: str = "in-process",
) -> AsyncIterator[Rig]:
    """``via``: the gateway calls the service in-process (``serve``'s default), over gRPC
    with the internal token (``grpc-token``: ``AGENT_GATEWAY_INVOKER=grpc``, or a standalone
    gateway sharing ``AGENT_INTERNAL_TOKEN``) or without it (``grpc``: a standalone gateway
    the server does not trust)."""
    async with StreamFake(pace=pace, awkward=False) as fake:
        llm = fake.llm_config("openai", max_attempts=1)
        dead = {**llm, "openai_api_base": f"http://127.0.0.1:{free_port()}/v1"}
        manifest = networks(folder, llm, dead)
        server = AgentServer(ServerConfig(
            host="127.0.0.1", port=0, manifest_paths=[manifest], chat_context_key=chat_context_key,
            access=AccessPolicy.from_env({"AGENT_API_KEYS": keys, "AGENT_API_KEYS_FILE": str(keys_file or "")}),
            rate_limits=limits or CallerLimits(),
        ))
        await server.start()
        invoker = (InProcessInvoker(server.handlers.generic, server.health, server.config.max_message_bytes)
                   if via == "in-process" else server.internal_target)
        frontends = protocol_frontends(playground=False, env=env or {})
        settings = dataclasses.replace(config or GatewayConfig(), send_internal_token=via == "grpc-token")
        gateway = await start_gateway(invoker, "127.0.0.1", 0, settings, frontends=frontends)
        try:
            yield Rig(fake, f"http://127.0.0.1:{gateway.port}", server)
        finally:
            await gateway.stop()
            await server.stop(0.5)


def sent_messages(fake: StreamFake, index: int = -1) -> list[tuple[str, str]]:
    """(role, text) of the messages the network's LLM call ``index`` was sent."""
    body = fake.requests[index].body
    out = []
    for message in body["messages"]:
        content = message.get("content")
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content or [] if isinstance(p, dict))
        out.append((message["role"], text))
    return out
