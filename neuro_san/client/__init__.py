"""Client library for neuro-san agent servers, over gRPC or the HTTP gateway.

- :class:`AsyncAgentClient` (async) and :class:`AgentClient` (blocking), made with
  ``.grpc("host:port")``, ``.http("http://host:port")`` or ``.from_url(url)``;
- :class:`Conversation`, which carries ``chat_context`` between turns by itself;
- typed results (:class:`FunctionInfo`, :class:`Connectivity`, ``ChatMessage`` …) and
  one exception per status (:mod:`neuro_san.client.errors`);
- :func:`neuro_san.client.remote.remote_agent`, the server's external agents.

Importing this package imports neither grpc nor aiohttp; each transport is imported
when a client of its kind is made.
"""

from neuro_san.client.api import AsyncAgentClient, Conversation
from neuro_san.client.errors import (
    AgentNotFound,
    Cancelled,
    ClientError,
    DeadlineExceeded,
    InvalidRequest,
    PermissionDenied,
    ResourceExhausted,
    ServerError,
    Unauthenticated,
    Unavailable,
)
from neuro_san.client.sync import AgentClient, SyncConversation
from neuro_san.client.types import MAXIMAL, MINIMAL, Connectivity, FunctionInfo
from neuro_san.core.messages import AgentInfo, ChatContext, ChatFilter, ChatMessage, MessageType, Origin

__all__ = [
    "MAXIMAL",
    "MINIMAL",
    "AgentClient",
    "AgentInfo",
    "AgentNotFound",
    "AsyncAgentClient",
    "Cancelled",
    "ChatContext",
    "ChatFilter",
    "ChatMessage",
    "ClientError",
    "Connectivity",
    "Conversation",
    "DeadlineExceeded",
    "FunctionInfo",
    "InvalidRequest",
    "MessageType",
    "Origin",
    "PermissionDenied",
    "ResourceExhausted",
    "ServerError",
    "SyncConversation",
    "Unauthenticated",
    "Unavailable",
]
