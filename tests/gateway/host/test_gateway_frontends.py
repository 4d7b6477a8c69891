"""The front-end seam: a front-end mounted beside the REST routes reaches agents only
through the invoker, with the caller's headers as metadata, and is closed with the
gateway. A real server and a real gateway on loopback; the front-end is a small one
written here."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterable

import aiohttp
from aiohttp import web
from neuro_san.api.grpc import agent_pb2

from gateway.composition import start_gateway
from gateway.host.config import GatewayConfig
from gateway.host.frontends import FrontEndContext, FrontEndRoute
from gateway.host.responses import dumps, json_response
from neuro_san.service.server import AgentServer, ServerConfig
from tests.support.servers import BUNDLED_MANIFEST, ROOT


class EchoFrontEnd:
    """Answers ``GET /probe/{agent}`` with the agent's Function description."""

    def __init__(self, context: FrontEndContext) -> None:
        self.context = context
        self.function = context.method("AgentService", "Function")
        self.closed = False

    def routes(self) -> Iterable[FrontEndRoute]:
        return [FrontEndRoute("GET", "/probe/{agent}", "probe", self.probe)]

    async def probe(self, request: web.Request, captures: dict[str, str], _body: bytes) -> web.StreamResponse:
        metadata = [*self.context.headers.to_metadata(request.headers), ("agent-name", captures["agent"])]
        reply = await self.function(agent_pb2.FunctionRequest(), metadata=metadata, timeout=5)
        return json_response(200, dumps({"agent": captures["agent"],
                                         "description": reply.function.description}))

    async def close(self) -> None:
        self.closed = True


def scenario_in_this_process() -> None:
    """Runs in a child process: grpc.aio's poller thread would keep pytest from exiting."""
    made: list[EchoFrontEnd] = []

    def factory(context: FrontEndContext) -> EchoFrontEnd:
        made.append(EchoFrontEnd(context))
        return made[-1]

    async def scenario() -> None:
        config = ServerConfig.from_env()
        config.host, config.port = "127.0.0.1", 0
        server = AgentServer(config)
        await server.start()
        handle = await start_gateway(server.internal_target, "127.0.0.1", 0, GatewayConfig(), frontends=[factory])
        try:
            async with aiohttp.ClientSession() as session:
                base = f"http://127.0.0.1:{handle.port}"
                async with session.get(f"{base}/probe/deep/math_guy") as reply:
                    assert reply.status == 200, await reply.text()
                    body = await reply.json()
                assert body["agent"] == "deep/math_guy"
                assert body["description"]
                async with session.post(f"{base}/probe/math_guy") as reply:
                    assert reply.status == 405
                    assert reply.headers["Allow"] == "GET"
                async with session.get(f"{base}/api/v1/list") as reply:  # REST routes unchanged
                    assert reply.status == 200
        finally:
            await handle.stop()
            await server.stop(0)
        assert made[0].closed

    asyncio.run(scenario())
    print("FRONTEND-OK")


def test_a_frontend_is_routed_calls_through_the_invoker_and_is_closed() -> None:
    env = {**os.environ, "AGENT_MANIFEST_FILE": str(BUNDLED_MANIFEST), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.gateway.host.test_gateway_frontends"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "FRONTEND-OK" in result.stdout


if __name__ == "__main__":
    scenario_in_this_process()
