"""The protocol front-ends (MCP, A2A, AG-UI, the OpenAI API, any added later) reach agents
only through the agents facade.

Read with ``ast`` (nothing imported): no module of a front-end's room (every folder of
``gateway/`` but the host, the transcoder, the invokers, the facade and the shared state) imports
the chat's generated messages (``agent_pb2``, ``chat_pb2``, ``concierge_pb2``,
``directory_pb2``: the facade converts), names a chat-stream message type (``"AGENT_FRAMEWORK"``,
``"TOKEN_DELTA"``…, the facade's reading), catches or names a grpc exception (a failure is the
facade's ``ChatFailed`` / ``AgentsFailed``), or knows the internal metadata that carries a
caller's rules (``Caller``'s fields, which only the facade turns into metadata).

The one exception is A2A's gRPC binding (``grpc_binding.py``, ``grpc_servicer.py``): it is a
gRPC *servicer* on the gRPC port, so it imports grpc's server API and filters the metadata a
gRPC client sends by the keys the gateway owns; it still calls agents through the facade
and catches no grpc exception.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from neuro_san.api.grpc import chat_pb2

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
#: The rooms that are not protocol front-ends: the house itself, REST (it transcodes the
#: protos, as the user asked), the facade, and the playground (a web app that calls the
#: public HTTP API from the browser; on the server it only answers neuro-san's health body,
#: from the gRPC health service). Every other folder is checked, so a new front-end is
#: covered the day it is added.
NOT_FRONT_ENDS = frozenset({"host", "transcoder", "invokers", "agents", "state", "playground", "__pycache__"})
PACKAGES = tuple(sorted(p.name for p in GATEWAY.iterdir() if p.is_dir() and p.name not in NOT_FRONT_ENDS))
#: A2A's gRPC binding: a servicer of its own (see the module's docstring).
GRPC_SERVICERS = frozenset({"a2a/grpc_binding.py", "a2a/grpc_servicer.py"})
#: The generated messages of the agents' API (the facade's to convert).
AGENT_MESSAGES = frozenset({"agent_pb2", "chat_pb2", "concierge_pb2", "directory_pb2", "mime_data_pb2"})
#: The chat stream's message types, as names: the facade's reading of the stream.
STREAM_TYPES = frozenset(chat_pb2.ChatMessage.ChatMessageType.keys()) - {"UNKNOWN", "SYSTEM", "HUMAN", "AI", "AGENT"}
GRPC_EXCEPTIONS = frozenset({"AioRpcError", "RpcError"})
#: The metadata carrying a caller's rules and the gateway's privileges (values start so).
INTERNAL_KEY_PREFIX = "neuro-san-"


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((GATEWAY / package).rglob("*.py")):
            name = path.relative_to(GATEWAY).as_posix()
            yield name, ast.parse(path.read_text(encoding="utf-8"), name)


def problems(name: str, tree: ast.Module) -> list[str]:
    """What of ``tree`` reaches agents other than through the facade."""
    found: list[str] = []
    servicer = name in GRPC_SERVICERS
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            names = [alias.name for alias in node.names]
            modules = [module] if isinstance(node, ast.ImportFrom) else names
            if any(m == "grpc" or m.startswith("grpc.") for m in modules) and not servicer:
                found.append(f"line {node.lineno}: imports grpc")
            if any(m.startswith("neuro_san.api.grpc") for m in modules):
                parts = {*names, *(part for m in modules for part in m.split("."))}
                if parts & AGENT_MESSAGES:
                    found.append(f"line {node.lineno}: imports the agents' generated messages")
            if any(m.startswith("neuro_san.") for m in modules):
                keys = [n for n in names if n.endswith("_METADATA_KEY") or n == "INTERNAL_TOKEN_KEY"]
                if keys or ("neuro_san.core.internal_metadata" in modules and not servicer):
                    found.append(f"line {node.lineno}: imports internal metadata ({', '.join(names)})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in STREAM_TYPES:
                found.append(f"line {node.lineno}: names the stream type {node.value}")
            if node.value.startswith(INTERNAL_KEY_PREFIX):
                found.append(f"line {node.lineno}: names internal metadata {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr in STREAM_TYPES | GRPC_EXCEPTIONS | {"ChatMessageType"}:
            found.append(f"line {node.lineno}: uses {node.attr}")
        elif isinstance(node, ast.Name) and node.id in GRPC_EXCEPTIONS:
            found.append(f"line {node.lineno}: uses {node.id}")
    return found


@pytest.mark.parametrize(("name", "tree"), list(_modules()), ids=lambda value: value if isinstance(value, str) else "")
def test_a_protocol_front_end_reaches_agents_only_through_the_facade(name: str, tree: ast.Module) -> None:
    assert problems(name, tree) == [], name


@pytest.mark.parametrize("source", [
    "import grpc\ntry:\n    pass\nexcept grpc.aio.AioRpcError:\n    pass\n",
    "from neuro_san.api.grpc import agent_pb2\n",
    "import neuro_san.api.grpc.chat_pb2\n",
    "kind = 'AGENT_FRAMEWORK'\n",
    "delta = message.type == chat_pb2.ChatMessage.TOKEN_DELTA\n",
    "from neuro_san.core.access import PRIVATE_NAMED_ONLY_METADATA_KEY\n",
    "metadata.append(('neuro-san-public-directory', 'true'))\n",
    "from grpc.aio import AioRpcError\n",
])
def test_the_check_sees_each_way_around_the_facade(source: str) -> None:
    assert problems("mcp/example.py", ast.parse(source)), source
