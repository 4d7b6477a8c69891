"""Helpers for the A2A tests: the official a2a-sdk client against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_message
from a2a.types import Message, Role, SendMessageRequest, StreamResponse
from google.protobuf import json_format, struct_pb2

from tests.support.servers import ROOT, free_port


@asynccontextmanager
async def a2a_client(url: str, streaming: bool, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """An SDK client for the agent at ``url``, resolved through its Agent Card."""
    async with httpx.AsyncClient(timeout=30, headers=headers or {}) as http:
        client = await create_client(url, ClientConfig(streaming=streaming, httpx_client=http))
        try:
            yield client
        finally:
            await client.close()


def user_message(text: str, context_id: str | None = None, neuro_san: dict[str, Any] | None = None) -> Message:
    message = new_text_message(text, context_id=context_id, role=Role.ROLE_USER)
    if neuro_san is not None:
        metadata = struct_pb2.Struct()
        metadata.update({"neuro_san": neuro_san})
        message.metadata.CopyFrom(metadata)
    return message


async def send(client: Client, message: Message) -> list[StreamResponse]:
    return [event async for event in client.send_message(SendMessageRequest(message=message))]


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message)


@contextmanager
def a2a_peer(key: str | None = None) -> Iterator[str]:
    """The a2a-sdk peer (tests/a2a_peer.py) in a child process; yields its agent URL."""
    port = free_port()
    args = [sys.executable, "-m", "tests.a2a_peer", "--port", str(port), *(["--key", key] if key else [])]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY"), line + process.stdout.read()
        yield f"http://127.0.0.1:{port}/oracle"
    finally:
        process.terminate()
        process.wait(10)


def write_network(folder: Path, name: str, document: dict[str, Any]) -> None:
    """Add ``name`` (a JSON document, which HOCON reads) to ``folder``'s manifest."""
    (folder / f"{name}.hocon").write_text(json.dumps(document))
    manifest = folder / "manifest.hocon"
    entries = json.loads(manifest.read_text()) if manifest.exists() else {}
    entries[f"{name}.hocon"] = True
    manifest.write_text(json.dumps(entries))


def final_text(events: list[StreamResponse]) -> str:
    task = events[-1].task
    return "\n".join(p.text for a in task.artifacts for p in a.parts)
