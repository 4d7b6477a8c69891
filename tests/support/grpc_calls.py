"""Raw gRPC calls by method path, as neuro-san's own clients make them."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import json_format
from neuro_san.api.grpc import agent_pb2, chat_pb2, concierge_pb2

QUALIFIED = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService"
CONCIERGE = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List"


def path(agent: str | None, method: str) -> str:
    return f"{QUALIFIED}/{method}" if agent is None else f"/{agent}.AgentService/{method}"


def metadata_for(agent: str | None, qualified: bool) -> list[tuple[str, str]]:
    return [("agent-name", agent)] if qualified and agent is not None else []


def function(channel: grpc.Channel, agent: str, qualified: bool = False) -> agent_pb2.FunctionResponse:
    call = channel.unary_unary(
        path(None if qualified else agent, "Function"),
        request_serializer=agent_pb2.FunctionRequest.SerializeToString,
        response_deserializer=agent_pb2.FunctionResponse.FromString,
    )
    return call(agent_pb2.FunctionRequest(), metadata=metadata_for(agent, qualified), timeout=10)


def connectivity(channel: grpc.Channel, agent: str, qualified: bool = False) -> agent_pb2.ConnectivityResponse:
    call = channel.unary_unary(
        path(None if qualified else agent, "Connectivity"),
        request_serializer=agent_pb2.ConnectivityRequest.SerializeToString,
        response_deserializer=agent_pb2.ConnectivityResponse.FromString,
    )
    return call(agent_pb2.ConnectivityRequest(), metadata=metadata_for(agent, qualified), timeout=10)


def chat_request(
    text: str,
    maximal: bool = False,
    sly_data: dict[str, Any] | None = None,
    chat_context: chat_pb2.ChatContext | None = None,
) -> agent_pb2.ChatRequest:
    request = agent_pb2.ChatRequest(user_message=chat_pb2.ChatMessage(type=chat_pb2.ChatMessage.HUMAN, text=text))
    if maximal:
        request.chat_filter.chat_filter_type = agent_pb2.MAXIMAL
    if sly_data:
        request.sly_data.update(sly_data)
    if chat_context is not None:
        request.chat_context.CopyFrom(chat_context)
    return request


def streaming_chat(
    channel: grpc.Channel,
    agent: str,
    request: agent_pb2.ChatRequest,
    qualified: bool = False,
    metadata: list[tuple[str, str]] | None = None,
    timeout: float = 20,
) -> list[agent_pb2.ChatResponse]:
    call = channel.unary_stream(
        path(None if qualified else agent, "StreamingChat"),
        request_serializer=agent_pb2.ChatRequest.SerializeToString,
        response_deserializer=agent_pb2.ChatResponse.FromString,
    )
    md = metadata_for(agent, qualified) + (metadata or [])
    return list(call(request, metadata=md, timeout=timeout))


def concierge(channel: grpc.Channel) -> concierge_pb2.ConciergeResponse:
    call = channel.unary_unary(
        CONCIERGE,
        request_serializer=concierge_pb2.ConciergeRequest.SerializeToString,
        response_deserializer=concierge_pb2.ConciergeResponse.FromString,
    )
    return call(concierge_pb2.ConciergeRequest(), timeout=10)


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def origin_names(message: chat_pb2.ChatMessage) -> list[str]:
    return [f"{o.tool}#{o.instantiation_index}" for o in message.origin]
