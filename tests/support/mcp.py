"""A served copy of the example networks with MCP settings of every kind, and API keys,
for the MCP tests; and helpers to reach its ``/mcp`` with the official SDK's client."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.servers import ROOT, ServerProcess, start_server

REGISTRIES = ROOT / "neuro_san" / "registries"
USER_KEY = "mcp-user-key"  # may call the public networks
ADMIN_KEY = "mcp-admin-key"  # also the private deep/*
MANIFEST = """{
    "math_guy.hocon": true,
    # advertised as "parrot", titled "echo"
    "echo.hocon": {"mcp": {"name": "parrot"}},
    # a name with "/": tools__math_guy
    "tools/math_guy.hocon": true,
    # public, but not an MCP tool
    "hello_world.hocon": {"serve": true},
    # private: a tool only for keys that may call it
    "deep/math_guy.hocon": {"serve": true, "public": false, "mcp": true},
}
"""
KEYS = f"""keys:
  - name: user
    key: "{USER_KEY}"
    agents: ["*"]
  - name: admin
    key: "{ADMIN_KEY}"
    agents: ["*", "deep/*"]
"""


def write_registry(folder: Path) -> Path:
    """The manifest above and its network files in ``folder``; returns the manifest."""
    (folder / "tools").mkdir(parents=True, exist_ok=True)
    (folder / "deep").mkdir(exist_ok=True)
    for name in ("math_guy.hocon", "echo.hocon", "hello_world.hocon"):
        shutil.copy(REGISTRIES / name, folder / name)
    shutil.copy(REGISTRIES / "math_guy.hocon", folder / "tools" / "math_guy.hocon")
    shutil.copy(REGISTRIES / "deep" / "math_guy.hocon", folder / "deep" / "math_guy.hocon")
    (folder / "manifest.hocon").write_text(MANIFEST)
    (folder / "keys.yaml").write_text(KEYS)
    return folder / "manifest.hocon"


@contextmanager
def mcp_server(
    folder: Path, env: dict[str, str] | None = None, keys: bool = True, http_port: int | None = None
) -> Iterator[ServerProcess]:
    """``neuro-san serve`` over that registry, HTTP on, with the API keys unless ``keys`` is False."""
    manifest = write_registry(folder)
    full_env = {"AGENT_TOOL_PATH": str(ROOT / "neuro_san" / "coded_tools"), **(env or {})}
    if keys:
        full_env["AGENT_API_KEYS_FILE"] = str(folder / "keys.yaml")
    with start_server(manifest=manifest, env=full_env, http=True, http_port=http_port) as server:
        yield server


@asynccontextmanager
async def mcp_client(
    server: ServerProcess, key: str | None = USER_KEY, mode: str = "auto", **headers: str
) -> AsyncIterator[Client]:
    """The SDK's Client over Streamable HTTP, sending ``Authorization: Bearer key``; ``mode``
    is the SDK's: ``auto`` (discover, else the handshake), ``legacy``, or a modern revision."""
    sent = {**headers}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    async with httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(f"{server.http_base}/mcp", http_client=http), mode=mode) as client:
            yield client
