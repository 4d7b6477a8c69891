"""A small A2A agent made with the official a2a-sdk (Starlette + uvicorn), not with our
code: the peer our networks call in the A2A client tests.

    python -m tests.a2a_peer --port N [--key SECRET]

It serves its card at ``/oracle/.well-known/agent-card.json`` and JSON-RPC at ``/oracle``;
it answers every message with ``oracle says 1234 to: <text>`` (plus the sly_data a
neuro-san caller sent in ``metadata.neuro_san``) as a completed task with an artifact,
or fails the task when the text contains ``fail``. With ``--key``, requests
without ``Authorization: Bearer <key>`` get 401. Prints ``READY`` when it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, Task, TaskState, TaskStatus
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

ANSWER = "oracle says 1234 to: "


class OracleExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = get_message_text(context.message)
        task_id, context_id = str(context.task_id), str(context.context_id)
        await event_queue.enqueue_event(Task(id=task_id, context_id=context_id,
                                             status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        if "fail" in text:
            await updater.failed(new_text_message("the oracle is confused"))
            return
        metadata = json_format.MessageToDict(context.message.metadata)
        sly_data = metadata.get("neuro_san", {}).get("sly_data")
        suffix = f" (sly_data: {json.dumps(sly_data, sort_keys=True)})" if sly_data else ""
        await updater.add_artifact([Part(text=ANSWER + text + suffix)], name="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


def make_app(port: int, key: str | None) -> Starlette:
    card = AgentCard(
        name="oracle",
        description="Knows the magic number.",
        version="1.0",
        supported_interfaces=[AgentInterface(url=f"http://127.0.0.1:{port}/oracle", protocol_binding="JSONRPC",
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="magic", name="magic", description="Tells the magic number.", tags=["magic"])],
    )
    handler = DefaultRequestHandler(agent_executor=OracleExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card, card_url="/oracle/.well-known/agent-card.json"),
              *create_jsonrpc_routes(handler, rpc_url="/oracle")]
    app = Starlette(routes=routes)
    if key:
        async def check_key(request: Request, call_next: Any) -> Response:
            if request.headers.get("authorization") != f"Bearer {key}":
                return JSONResponse({"error": "unauthorized"}, status_code=401)
            response: Response = await call_next(request)
            return response

        app.add_middleware(BaseHTTPMiddleware, dispatch=check_key)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key")
    args = parser.parse_args()
    config = uvicorn.Config(make_app(args.port, args.key), host="127.0.0.1", port=args.port, log_level="warning")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 - uvicorn sets a flag, not an event
            await asyncio.sleep(0.02)
        print("READY", flush=True)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
