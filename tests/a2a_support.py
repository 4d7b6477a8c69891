"""Helpers for the A2A tests: the official a2a-sdk client against a real server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_message
from a2a.types import Message, Role, SendMessageRequest, StreamResponse
from google.protobuf import json_format, struct_pb2


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
