"""The gRPC transport: one shared ``grpc.aio`` channel per client.

Agent calls go to the package-qualified ``AgentService`` with the agent named in the
``agent-name`` metadata, so agent names with ``/`` (``deep/math_guy``) work too. The
channel is opened lazily inside the running event loop (a ``grpc.aio`` channel belongs
to the loop it was made in), and opened again if the client moves to another loop.
"""

# `timeout` is the call's deadline, handed to grpc/aiohttp, which enforce it natively (and
# asyncio.timeout would be wrong in the streaming generators): hence no ASYNC109.
# ruff: noqa: ASYNC109

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import grpc

from neuro_san.api.grpc import agent_pb2, concierge_pb2
from neuro_san.client.errors import ClientError, Unavailable, error_for
from neuro_san.core.errors import Code

AGENT_SERVICE = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService"
CONCIERGE_LIST = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List"
AGENT_NAME_KEY = "agent-name"

#: Chat contexts grow with the conversation; accept what the server is willing to send.
_CHANNEL_OPTIONS: Sequence[tuple[str, Any]] = (
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
)


class GrpcTransport:
    def __init__(self, target: str, secure: bool = False) -> None:
        self.target = target
        self.secure = secure
        self._channel: grpc.aio.Channel | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._calls: dict[str, Any] = {}

    @property
    def description(self) -> str:
        return f"{'grpcs' if self.secure else 'grpc'}://{self.target}"

    def _callables(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        if self._channel is None or self._loop is not loop:
            if self.secure:
                channel = grpc.aio.secure_channel(self.target, grpc.ssl_channel_credentials(), _CHANNEL_OPTIONS)
            else:
                channel = grpc.aio.insecure_channel(self.target, _CHANNEL_OPTIONS)
            self._channel, self._loop = channel, loop
            self._calls = {
                "list": channel.unary_unary(
                    CONCIERGE_LIST,
                    request_serializer=concierge_pb2.ConciergeRequest.SerializeToString,
                    response_deserializer=concierge_pb2.ConciergeResponse.FromString,
                ),
                "function": channel.unary_unary(
                    f"{AGENT_SERVICE}/Function",
                    request_serializer=agent_pb2.FunctionRequest.SerializeToString,
                    response_deserializer=agent_pb2.FunctionResponse.FromString,
                ),
                "connectivity": channel.unary_unary(
                    f"{AGENT_SERVICE}/Connectivity",
                    request_serializer=agent_pb2.ConnectivityRequest.SerializeToString,
                    response_deserializer=agent_pb2.ConnectivityResponse.FromString,
                ),
                "chat": channel.unary_stream(
                    f"{AGENT_SERVICE}/StreamingChat",
                    request_serializer=agent_pb2.ChatRequest.SerializeToString,
                    response_deserializer=agent_pb2.ChatResponse.FromString,
                ),
            }
        return self._calls

    def _metadata(self, agent: str | None, extra: Mapping[str, str] | None) -> list[tuple[str, str]]:
        pairs = [(AGENT_NAME_KEY, agent)] if agent is not None else []
        pairs += [(key.lower(), str(value)) for key, value in (extra or {}).items()]
        return pairs

    async def list(self, timeout: float | None) -> concierge_pb2.ConciergeResponse:
        try:
            return await self._callables()["list"](concierge_pb2.ConciergeRequest(), timeout=timeout)
        except grpc.aio.AioRpcError as error:
            raise self._error(error, None) from None

    async def function(
        self, agent: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> agent_pb2.FunctionResponse:
        try:
            call = self._callables()["function"]
            return await call(agent_pb2.FunctionRequest(), metadata=self._metadata(agent, metadata), timeout=timeout)
        except grpc.aio.AioRpcError as error:
            raise self._error(error, agent) from None

    async def connectivity(
        self, agent: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> agent_pb2.ConnectivityResponse:
        try:
            call = self._callables()["connectivity"]
            request = agent_pb2.ConnectivityRequest()
            return await call(request, metadata=self._metadata(agent, metadata), timeout=timeout)
        except grpc.aio.AioRpcError as error:
            raise self._error(error, agent) from None

    async def streaming_chat(
        self,
        agent: str,
        request: agent_pb2.ChatRequest,
        metadata: Mapping[str, str] | None,
        timeout: float | None,
    ) -> AsyncIterator[agent_pb2.ChatResponse]:
        call = self._callables()["chat"](request, metadata=self._metadata(agent, metadata), timeout=timeout)
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as error:
            raise self._error(error, agent) from None
        finally:
            # A consumer that stops early (or is cancelled) must stop the server's work.
            if not call.done():
                call.cancel()

    async def close(self) -> None:
        channel, self._channel, self._calls = self._channel, None, {}
        if channel is not None and self._loop is asyncio.get_running_loop():
            await channel.close()

    def _error(self, error: grpc.aio.AioRpcError, agent: str | None) -> ClientError:
        code = Code(error.code().value[0])
        message = error.details() or error.code().name
        details = _details(error)
        # The server's own UNAVAILABLE (an upstream it could not reach) carries details;
        # grpc core's "failed to connect" about this server does not.
        if code is Code.UNAVAILABLE and not details and _is_connection_failure(message):
            return Unavailable(f"cannot reach the gRPC server at {self.target}: {message}", code, agent=agent)
        if code is Code.UNIMPLEMENTED and agent is not None:
            message = f"agent {agent!r} is not served at {self.target} ({message})"
        return error_for(code, message, details, agent)


def _is_connection_failure(message: str) -> bool:
    return message.lower().startswith(("failed to connect", "connection refused", "dns resolution", "connect failed"))


def _details(error: grpc.aio.AioRpcError) -> list[dict[str, Any]]:
    """The ``google.rpc.Status`` details of the trailer, as JSON-like dicts."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            try:
                # Lazy: only for an error with details.
                from google.protobuf import json_format
                from google.rpc import error_details_pb2, status_pb2  # noqa: F401 - registers the detail types

                status = status_pb2.Status.FromString(value)
                return [dict(json_format.MessageToDict(d, preserving_proto_field_name=True)) for d in status.details]
            except Exception:  # a malformed trailer must not hide the error itself
                return []
    return []
