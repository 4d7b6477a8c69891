"""A long answer's progress carries its end, not all of it.

With a progress token, each delta of the front man's answer is a progress notification whose
message is the answer so far; past :data:`~gateway.mcp.calls.ANSWER_TAIL_LIMIT` characters it
is an ellipsis and the answer's end, so a long answer does not cost the square of its length on
the wire. The result still holds the whole answer. A real in-process server answers through the
streaming provider fake over real HTTP, reached by the real invoker and agents facade.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from neuro_san.api.grpc import directory_pb2

from gateway.agents.invoked import InvokedAgents
from gateway.invokers.inprocess import InProcessInvoker
from gateway.invokers.interface import methods_of
from gateway.mcp.calls import ANSWER_TAIL_LIMIT, ToolCaller
from gateway.mcp.tools import ToolCatalog
from gateway.transcoder.frontend import default_services
from neuro_san.service.server import AgentServer, ServerConfig
from tests.fakes.stream_fake import StreamFake

pytestmark = pytest.mark.slow


def test_a_long_answers_progress_carries_its_end_not_all_of_it(tmp_path: Path) -> None:
    question = " ".join(f"w{n}" for n in range(600))  # ~3,000 characters, echoed word by word
    messages: list[str] = []

    async def progress(steps: int, message: str) -> None:
        messages.append(message)

    async def main() -> None:
        async with StreamFake(pace=0.002, awkward=False) as fake:  # paced: the deltas stay apart
            network = {"llm_config": fake.llm_config("openai", max_attempts=1), "tools": [
                {"name": "front", "function": {"description": "Echo."}, "instructions": "Answer."}]}
            (tmp_path / "echo.json").write_text(json.dumps(network))
            (tmp_path / "manifest.json").write_text(json.dumps({"echo.json": True}))
            server = AgentServer(ServerConfig(host="127.0.0.1", port=0, manifest_paths=[tmp_path / "manifest.json"]))
            await server.start()
            invoker = InProcessInvoker(server.handlers.generic, server.health, server.config.max_message_bytes)
            methods = methods_of([*default_services(), directory_pb2.DESCRIPTOR.services_by_name["DirectoryService"]])
            by_name = {path.rsplit("/", 1)[-1]: invoker.callable_for(ref) for path, ref in methods.items()}
            agents = InvokedAgents(by_name["StreamingChat"], 20.0, directory_list=by_name["List"],
                                   function=by_name["Function"])
            try:
                tool, _ = await ToolCatalog(agents).resolve("echo", [])
                assert tool is not None
                result = await ToolCaller(agents).call(
                    tool, {"user_message": {"text": question}}, [], progress)
            finally:
                await invoker.close()
                await server.stop(0.5)
        answer = result["content"][0]["text"]
        assert question in answer, "the result holds the whole answer"
        # The answer's messages (the others are steps): a prefix of it, or an ellipsis and its end.
        growing = [m for m in messages if answer.startswith(m) or (m.startswith("\u2026") and answer.endswith(m[1:]))]
        assert len(growing) > 50, "the answer came as many deltas"
        assert max(map(len, growing)) == ANSWER_TAIL_LIMIT, "no message carries more than the limit"
        assert growing[-1] == "\u2026" + answer[-(ANSWER_TAIL_LIMIT - 1):], "the last one ends as the answer does"
        assert any(len(m) < ANSWER_TAIL_LIMIT and answer.startswith(m) for m in growing), "until then, the text so far"

    asyncio.run(asyncio.wait_for(main(), 60))
