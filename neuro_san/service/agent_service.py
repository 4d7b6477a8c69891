"""AgentService on both routes, for every hosted agent, with one generic handler.

- ``/<agent>.AgentService/<Method>``: neuro-san 0.5's per-agent service names, which
  its ``agent_cli --grpc`` and ``GrpcServiceAgentSession`` call. Names with ``/``
  (``deep/math_guy``) work: the method path is split at its *last* ``/``. An unknown
  agent is UNIMPLEMENTED, as upstream ("grpc gives the hand").
- ``/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/<Method>`` with the agent
  in the ``agent-name`` request metadata: what generated stubs, grpcurl with reflection
  and the gateway call. No metadata is INVALID_ARGUMENT; an unknown agent NOT_FOUND.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from neuro_san.api.grpc import agent_pb2
from neuro_san.core.access import (
    ANYONE,
    AccessPolicy,
    Principal,
    credentials_from_metadata,
    exposed,
    private_named_only,
    public_directory,
)
from neuro_san.core.agent_api import AgentApi
from neuro_san.core.errors import AgentNotFound, InvalidRequest, NeuroSanError
from neuro_san.core.internal_metadata import (
    AGENT_NAME_KEY,
    LEAVE_OUT_AGENT_USAGE,
    LEAVE_OUT_INPUTS,
    client_history,
    inbound_metadata,
    left_out,
)
from neuro_san.core.messages import MessageType
from neuro_san.core.rate_limits import RateLimiter
from neuro_san.core.request_ids import request_id_from
from neuro_san.core.telemetry import NO_SPAN, NO_TELEMETRY, Span, Telemetry
from neuro_san.core.token_budgets import TokenLedger
from neuro_san.service.admission import Admission
from neuro_san.service.caller_limits import caller_of
from neuro_san.service.errors import abort_with
from neuro_san.service.limits_gate import LocalGate, RedisGate
from neuro_san.service.logs import CALL
from neuro_san.wire import convert

log = logging.getLogger(__name__)

SERVICE = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
AGENT_SUFFIX = ".AgentService"

_EMPTY_RESPONSE = agent_pb2.ChatResponse()


#: Server span names by method: ``chat <agent>``, ``function <agent>``…
_SPAN_PREFIX = {"StreamingChat": "chat", "Function": "function", "Connectivity": "connectivity"}


@dataclass(slots=True)
class _Call:
    agent: str
    request_id: str = ""
    method: str = ""
    span: Span = NO_SPAN
    principal: Principal | None = None
    #: The call's request metadata, read once: grpc.aio's ``invocation_metadata()`` builds
    #: a new tuple of namedtuples from the C array on every call (it was read 5 times).
    metadata: tuple[tuple[str, Any], ...] = ()

    def bind(self, agent: str) -> str:
        """Name the agent once known, for telemetry, the span and every log line of the call."""
        self.agent = agent
        CALL.set((self.request_id, agent))
        if self.span is not NO_SPAN:
            self.span.update_name(f"{_SPAN_PREFIX.get(self.method, self.method)} {agent}")
            self.span.set_attribute("neuro_san.agent", agent)
        return agent


@dataclass(frozen=True, slots=True)
class _Undecodable:
    """A request message that did not parse; the handler refuses it as INVALID_ARGUMENT."""

    reason: str


def _lenient(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """A request deserializer that does not raise: grpc turns a deserializer's exception
    into UNKNOWN ("Unexpected DecodeError"), a server-error code for a client's bad bytes."""

    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except DecodeError as error:
            return _Undecodable(str(error))

    return deserialize


def _refuse_undecodable(request: Any) -> None:
    if isinstance(request, _Undecodable):
        raise InvalidRequest(f"the request message is not valid protobuf: {request.reason}")


REQUEST_ID_KEY = "request-id"


def _stamp(context: grpc.aio.ServicerContext, call: _Call) -> None:
    """The call ends with its request id (the client's ``request_id`` or ``x-request-id``,
    or one made up) in its trailing metadata, with the status: clients quote it and find
    the call in the server's log. Sent with the status rather than as initial metadata,
    it costs no message of its own (issue 37); over HTTP the gateway knows the id before
    the call (it sends the client's, or makes one up) and answers it as the
    ``Grpc-Metadata-Request-Id`` header, as before."""
    context.set_trailing_metadata(((REQUEST_ID_KEY, call.request_id),))


def _id_trailer() -> tuple[tuple[str, str], ...]:
    """The request id of the call being served, for the trailer of its error."""
    current = CALL.get()
    return ((REQUEST_ID_KEY, current[0]),) if current is not None else ()


class AgentRouter(grpc.GenericRpcHandler):
    def __init__(
        self,
        agents: AgentApi,
        forwarded_metadata: Sequence[str] = (),
        admission: Admission | None = None,
        access: AccessPolicy | None = None,
        telemetry: Telemetry = NO_TELEMETRY,
        gate: LocalGate | RedisGate | None = None,
    ) -> None:
        self._agents = agents
        #: Per-caller rate limits and token budgets.
        self._gate = gate or LocalGate(RateLimiter(), TokenLedger())
        self._telemetry = telemetry
        self._access = access or AccessPolicy()
        self._admission = admission or Admission()
        self._forwarded = tuple(k.lower() for k in forwarded_metadata)
        self._qualified = self._handlers(None)
        self._per_agent: dict[str, grpc.RpcMethodHandler] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        path: str = handler_call_details.method  # type: ignore[attr-defined]
        service, _, method = path[1:].rpartition("/")
        if service == SERVICE:
            return self._qualified.get(method)
        if not service.endswith(AGENT_SUFFIX):
            return None
        agent = service[: -len(AGENT_SUFFIX)]
        if not self._agents.has_agent(agent):
            return None
        handler = self._per_agent.get(path)
        if handler is None:
            handler = self._handlers(agent).get(method)
            if handler is None:
                return None
            if len(self._per_agent) > 10_000:  # bounded; agents come and go on reload
                self._per_agent.clear()
            self._per_agent[path] = handler
        return handler

    def _handlers(self, agent: str | None) -> dict[str, grpc.RpcMethodHandler]:
        return {
            "Function": grpc.unary_unary_rpc_method_handler(
                self._unary("Function", agent, self._function),
                request_deserializer=_lenient(agent_pb2.FunctionRequest.FromString),
                response_serializer=agent_pb2.FunctionResponse.SerializeToString,
            ),
            "Connectivity": grpc.unary_unary_rpc_method_handler(
                self._unary("Connectivity", agent, self._connectivity),
                request_deserializer=_lenient(agent_pb2.ConnectivityRequest.FromString),
                response_serializer=agent_pb2.ConnectivityResponse.SerializeToString,
            ),
            "StreamingChat": grpc.unary_stream_rpc_method_handler(
                self._streaming_chat(agent),
                request_deserializer=_lenient(agent_pb2.ChatRequest.FromString),
                response_serializer=agent_pb2.ChatResponse.SerializeToString,
            ),
        }

    def _function(self, agent: str, _request: agent_pb2.FunctionRequest) -> agent_pb2.FunctionResponse:
        return convert.function_to_proto(self._agents.function(agent))

    def _connectivity(self, agent: str, _request: agent_pb2.ConnectivityRequest) -> agent_pb2.ConnectivityResponse:
        return convert.connectivity_to_proto(*self._agents.connectivity(agent))

    async def _agent_name(self, fixed: str | None, call: _Call, directory: bool = False) -> str:
        """The agent the call names, once the caller (API key or OAuth access token) is
        allowed to call it; ``directory``: a method of the public directory (Function)."""
        metadata = call.metadata
        name = fixed if fixed is not None else self._named_in_metadata(metadata)
        if directory and public_directory(metadata):  # a public description, read without credentials
            if not self._agents.is_public(name):
                raise AgentNotFound(name)
            return name
        principal = ANYONE
        if self._access.enabled:
            principal = await self._access.identify(credentials_from_metadata(metadata))
            self._access.check(principal, name, self._agents.is_public(name))
            call.principal = principal
        if not exposed(principal, name, self._agents.is_public(name), named_only=private_named_only(metadata)):
            raise AgentNotFound(name)
        return name

    def _named_in_metadata(self, metadata: Sequence[tuple[str, Any]]) -> str:
        for key, value in metadata:
            if key == AGENT_NAME_KEY:
                return value if isinstance(value, str) else value.decode()
        raise InvalidRequest(
            f"name the agent: send request metadata '{AGENT_NAME_KEY}: <agent>' on {SERVICE}, "
            f"or call the service '<agent>{AGENT_SUFFIX}'",
            field=AGENT_NAME_KEY,
        )

    def _metadata(self, metadata: Sequence[tuple[str, Any]]) -> dict[str, str]:
        if not self._forwarded:
            return {}
        found = {}
        for key, value in metadata:
            if key in self._forwarded and isinstance(value, str):
                found[key] = value
        return found

    @contextmanager
    def _observed(self, method: str, agent: str | None, context: grpc.aio.ServicerContext) -> Iterator[_Call]:
        """Report the call to telemetry and the log with the status it ends with."""
        # Internal keys (the public directory, the private-network rule…) only from the in-process gateway.
        metadata = inbound_metadata(context.invocation_metadata(), context.peer())
        call = _Call(agent or "", request_id_from(metadata), method, metadata=metadata)
        self._telemetry.request_started(call.agent, method)
        started = time.monotonic()
        code = "OK"
        # Each RPC runs in its own task, hence its own context: the value needs no reset
        # (and a stream closed from another context could not reset it anyway).
        CALL.set((call.request_id, call.agent))
        try:
            with self._telemetry.span(
                f"{_SPAN_PREFIX.get(method, method)} {call.agent}".rstrip(),
                {"rpc.system": "grpc", "rpc.method": method},
                parent=self._telemetry.extract(metadata),
                kind="server",
            ) as call.span:
                yield call
        except NeuroSanError as error:
            code = error.code.name
            raise
        except (asyncio.CancelledError, GeneratorExit):
            code = "CANCELLED"
            raise
        except Exception:
            code = "INTERNAL"
            raise
        finally:
            seconds = time.monotonic() - started
            self._telemetry.request_finished(call.agent, method, code, seconds)
            CALL.set((call.request_id, call.agent))
            log.info(
                "%s %s", method, code, extra={"method": method, "status": code, "duration_ms": round(seconds * 1000, 2)}
            )

    def _unary(
        self, method: str, agent: str | None, produce: Callable[[str, Any], Any]
    ) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                with self._observed(method, agent, context) as call:
                    _stamp(context, call)
                    _refuse_undecodable(request)
                    call.bind(await self._agent_name(agent, call, directory=method == "Function"))
                    return produce(call.agent, request)
            except Exception as error:
                await abort_with(context, error, _id_trailer())

        return behaviour

    def _streaming_chat(
        self, agent: str | None
    ) -> Callable[[agent_pb2.ChatRequest, grpc.aio.ServicerContext], AsyncIterator[agent_pb2.ChatResponse]]:
        async def behaviour(
            request: agent_pb2.ChatRequest, context: grpc.aio.ServicerContext
        ) -> AsyncIterator[agent_pb2.ChatResponse]:
            try:
                with self._observed("StreamingChat", agent, context) as call, self._admission.chat():
                    _stamp(context, call)
                    _refuse_undecodable(request)
                    name = call.bind(await self._agent_name(agent, call))
                    caller, limits = caller_of(call.principal, context.peer(), call.metadata)
                    async with self._gate.chat(caller, limits) as on_usage:
                        chat_request = convert.request_from_proto(request, self._metadata(call.metadata))
                        chat_request.on_usage = on_usage
                        # Believed only from our own front-ends: inbound_metadata dropped it otherwise.
                        chat_request.client_history = client_history(call.metadata)
                        leave_out = left_out(call.metadata)
                        chat_request.echo_inputs = LEAVE_OUT_INPUTS not in leave_out
                        chat_request.agent_usage = LEAVE_OUT_AGENT_USAGE not in leave_out
                        maximal = chat_request.chat_filter.is_maximal
                        echo = request if maximal and chat_request.echo_inputs else None
                        stream = self._agents.chat(name, chat_request)
                        try:
                            async for message in stream:
                                if message is None:
                                    yield _EMPTY_RESPONSE
                                    continue
                                # Deltas do not echo the request: dozens a second, each a copy.
                                delta = message.type is MessageType.TOKEN_DELTA
                                response = agent_pb2.ChatResponse(request=None if delta else echo)
                                convert.message_to_proto(message, response.response)
                                yield response
                        finally:
                            await stream.aclose()  # type: ignore[attr-defined]
            except Exception as error:
                await abort_with(context, error, _id_trailer())

        return behaviour
