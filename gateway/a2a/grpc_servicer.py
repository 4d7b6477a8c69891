"""The SDK side of A2A's gRPC binding (see :mod:`gateway.a2a.grpc_binding`).

Each call: parse the request; its ``tenant`` names the network (none: INVALID_ARGUMENT);
the caller's gRPC metadata becomes the call's metadata as the HTTP bindings make it from
headers (``authorization``, ``x-api-key``, the forwarded names, the client's address), and
every call to agents goes through the agents facade as the caller (a private network is
not there unless the caller's key names it); the network is asked for first, so an
unknown network (NOT_FOUND), a missing or wrong key (UNAUTHENTICATED) or a forbidden one
(PERMISSION_DENIED) is refused up front with the service's own status. Then the a2a-sdk's
``GrpcHandler`` answers with the front-end's request handler: the same task store, executor and push sender as JSON-RPC
and HTTP+JSON, with the same call state, so a task's owner (the credentials and the
network) is the same whichever binding sent it.

This module is a gRPC *servicer* (A2A's binding, serving its own calls on the gRPC port), so
it uses grpc's server API; it never calls agents in grpc terms (that is the facade's).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.grpc_handler import DefaultGrpcServerCallContextBuilder, GrpcHandler
from a2a.types import a2a_pb2
from a2a.utils import constants
from a2a.utils.errors import A2A_ERROR_REASONS, A2AError, InvalidParamsError, VersionNotSupportedError
from a2a.utils.grpc_status import status_to_grpc
from google.protobuf import any_pb2, message, message_factory
from google.rpc import error_details_pb2, status_pb2

from gateway.a2a.executor import call_state
from gateway.a2a.frontend import A2AFrontEnd
from gateway.a2a.outage import StoreUnavailable
from gateway.a2a.tasks import owner_of
from gateway.agents.interface import AgentsFailed, Caller
from gateway.host.errors import RpcFailure
from gateway.host.frontends import CLIENT_ADDRESS_METADATA
from neuro_san.core.internal_metadata import GATEWAY_OWNED_KEYS

_METHODS = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"].methods_by_name
#: Each method's request class, looked up once.
_REQUESTS: dict[str, type[message.Message]] = {
    name: message_factory.GetMessageClass(method.input_type) for name, method in _METHODS.items()
}
_STREAMING = frozenset({"SendStreamingMessage"})
#: The caller's credentials, passed on whatever the forwarded names.
_CREDENTIALS = frozenset({"authorization", "x-api-key"})
_CODES = {code.value[0]: code for code in grpc.StatusCode}
NO_TENANT = ("name the agent network in the request's tenant (the A2A SDK client sets it from the gRPC "
             "interface of the network's card, /a2a/<network>/.well-known/agent-card.json on the HTTP port)")


#: The A2A versions this binding serves, by major version (``lf.a2a.v1`` is A2A 1.x).
_SERVED_MAJOR = constants.PROTOCOL_VERSION_1_0.split(".")[0]
_VERSION_KEY = constants.VERSION_HEADER.lower()


def version_refusal(metadata: Any) -> str | None:
    """Why the caller's ``A2A-Version`` is not served, or None. As on JSON-RPC and
    HTTP+JSON (the SDK's ``validate_version``): none means 0.3, which this service (A2A
    1.0's) does not speak; any 1.x is served."""
    first = next((str(value).strip() for key, value in metadata or () if str(key).lower() == _VERSION_KEY), "")
    asked = first or constants.PROTOCOL_VERSION_0_3
    if asked.split(".")[0] == _SERVED_MAJOR and asked.split(".")[0].isdigit():
        return None
    return (f"A2A version {asked[:20]!r} is not supported on this binding: send "
            f"{constants.VERSION_HEADER}: {constants.PROTOCOL_VERSION_1_0} (an absent header means 0.3)")


async def abort_a2a(context: grpc.aio.ServicerContext, code: grpc.StatusCode, error: type[A2AError], text: str) -> None:
    """End the call with ``code`` and a ``google.rpc.ErrorInfo`` naming the A2A error, as
    the SDK's handler does for its own errors (A2A 1.0's gRPC error mapping)."""
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=A2A_ERROR_REASONS.get(error, "UNKNOWN_ERROR"),
                                          domain="a2a-protocol.org"))
    rich = status_to_grpc(status_pb2.Status(code=code.value[0], message=text, details=[info]))
    context.set_trailing_metadata(tuple(rich.trailing_metadata))
    await context.abort(rich.code, rich.details)


class _CallState(DefaultGrpcServerCallContextBuilder):
    """The SDK's call context (the gRPC context, extensions) plus this call's state."""

    def __init__(self, state: dict[str, Any]) -> None:
        super().__init__()
        self._state = state

    def build(self, context: grpc.aio.ServicerContext) -> ServerCallContext:
        built = super().build(context)
        built.state.update(self._state)
        return built


async def abort_unavailable(context: grpc.aio.ServicerContext, error: StoreUnavailable | None = None) -> None:
    """End the call as one that needs the task store while Redis is away: UNAVAILABLE, the
    message and a ``retry-after`` trailer, whether found at its start or met during it."""
    failure = (error or StoreUnavailable()).failure()
    if failure.retry_after:
        context.set_trailing_metadata((("retry-after", failure.retry_after),))
    await context.abort(_CODES[failure.code], failure.message)


class _Handler(GrpcHandler):
    """The SDK's gRPC handler; a Redis outage met during a call (the SDK's table knows only its
    own errors, and would say UNKNOWN) ends it as one found at its start. A stream that has
    started ends with that status too."""

    async def abort_context(self, error: A2AError, context: grpc.aio.ServicerContext) -> None:
        if isinstance(error, StoreUnavailable):
            await abort_unavailable(context, error)
        await super().abort_context(error, context)


def peer_host(peer: str) -> str:
    """``ipv4:1.2.3.4:5678`` → ``1.2.3.4``; ``ipv6:[::1]:5678`` → ``::1``; else as given."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6" and rest.startswith("["):
        return rest[1:rest.find("]")]
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    return peer


class TenantGrpcServicer:
    """Answers the A2A service's methods for the network each request names."""

    def __init__(self, frontend: A2AFrontEnd) -> None:
        self._frontend = frontend
        forwarded = {name.lower() for name in frontend.context.config.forwarded_headers}
        self._passed = frozenset(forwarded | _CREDENTIALS) - GATEWAY_OWNED_KEYS  # never a caller's

    def _metadata(self, context: grpc.aio.ServicerContext, invocation: Any) -> list[tuple[str, Any]]:
        """The caller's metadata (``invocation``: the call's, read once; grpc builds it anew on
        each read) as the HTTP bindings pass headers on; the client's address is appended
        last, so a caller cannot override it."""
        metadata: list[tuple[str, Any]] = [
            (key.lower(), value) for key, value in invocation or ()
            if key.lower() in self._passed and isinstance(value, str)
        ]
        address = peer_host(context.peer() or "")
        if address:
            metadata.append((CLIENT_ADDRESS_METADATA, address))
        return metadata

    async def _prepare(
        self, method: str, raw: bytes, context: grpc.aio.ServicerContext, refusals: list[RpcFailure]
    ) -> tuple[message.Message, GrpcHandler]:
        """The parsed request and the SDK's handler for this call, or an abort."""
        kind = _REQUESTS[method]
        try:
            request = kind.FromString(raw)
        except message.DecodeError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a {kind.DESCRIPTOR.full_name}: {error}")
        invocation = context.invocation_metadata()
        refusal = version_refusal(invocation)
        if refusal:  # A2A 1.0 maps VersionNotSupportedError to UNIMPLEMENTED on gRPC
            await abort_a2a(context, grpc.StatusCode.UNIMPLEMENTED, VersionNotSupportedError, refusal)
        agent = str(getattr(request, "tenant", "")).strip("/")
        if not agent:
            await abort_a2a(context, grpc.StatusCode.INVALID_ARGUMENT, InvalidParamsError, NO_TENANT)
        if not await self._frontend.state.available():  # tasks live in Redis, which is away: say so, quickly
            await abort_unavailable(context)
        metadata = self._metadata(context, invocation)
        try:
            await self._frontend.check_network(agent, Caller(metadata))  # unknown network, missing key: say so now
        except AgentsFailed as error:  # the service's own status, details and retry-after, as they came
            context.set_trailing_metadata(error.failure.trailers)
            await context.abort(_CODES.get(error.failure.code, grpc.StatusCode.UNKNOWN), error.failure.message)
        owner = owner_of(dict(metadata))
        state = call_state(agent, metadata, owner, refusals, streaming=method in _STREAMING)
        return request, _Handler(self._frontend.handler, _CallState(state))

    async def unary(self, method: str, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        refusals: list[RpcFailure] = []
        request, handler = await self._prepare(method, raw, context, refusals)
        response = await getattr(handler, method)(request, context)
        if refusals and method == "SendMessage":
            # The service refused the chat (caller limits, busy server): say it with its
            # status, as the HTTP bindings answer with theirs, not as a failed task.
            failure = refusals[-1]
            if failure.retry_after:
                context.set_trailing_metadata((("retry-after", failure.retry_after),))
            await context.abort(_CODES.get(failure.code, grpc.StatusCode.UNKNOWN), failure.message)
        return bytes(response.SerializeToString())

    async def stream(self, method: str, raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        request, handler = await self._prepare(method, raw, context, [])
        async for item in getattr(handler, method)(request, context):
            yield bytes(item.SerializeToString())
