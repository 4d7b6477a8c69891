"""One rule for private networks (``public: false``) on every front-end.

Over REST and gRPC, as in neuro-san, a private network is unlisted but callable by name.
On MCP and A2A it is not there at all unless the caller's API key names it: no card, no
chat, no tool. The rule is ``neuro_san.core.access.exposed``, asked for by both
front-ends through the same metadata.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.mcp import ADMIN_KEY, USER_KEY, mcp_client, mcp_server
from tests.support.servers import ServerProcess

PRIVATE = "deep/math_guy"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with mcp_server(Path(tmp_path_factory.mktemp("keyed"))) as server:
        yield server


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with mcp_server(Path(tmp_path_factory.mktemp("open")), keys=False) as server:
        yield server


def _card(server: ServerProcess, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{server.http_base}/a2a/{PRIVATE}/.well-known/agent-card.json", headers=headers, timeout=10)


def _a2a_send(server: ServerProcess, key: str | None, text: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body: dict[str, Any] = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}},
    }
    return httpx.post(f"{server.http_base}/a2a/{PRIVATE}", json=body, headers={**headers, "A2A-Version": "1.0"},
                      timeout=30)


def test_a2a_serves_a_private_network_only_to_a_key_that_names_it(keyed: ServerProcess) -> None:
    card = _card(keyed, ADMIN_KEY)
    assert card.status_code == 200, card.text
    assert card.json()["name"] == PRIVATE
    answer = _a2a_send(keyed, ADMIN_KEY, "6 * 7")
    assert answer.status_code == 200 and "42" in answer.text, answer.text

    # A key whose patterns reach only public networks ("*"): the network is not there.
    assert _card(keyed, USER_KEY).status_code == 404
    refused = _a2a_send(keyed, USER_KEY, "6 * 7")
    assert refused.status_code == 404, refused.text
    assert "42" not in refused.text


def test_mcp_follows_the_same_rule(keyed: ServerProcess) -> None:
    async def scenario() -> None:
        async with mcp_client(keyed, key=ADMIN_KEY) as client:
            assert "deep__math_guy" in {tool.name for tool in (await client.list_tools()).tools}
        async with mcp_client(keyed, key=USER_KEY) as client:
            assert "deep__math_guy" not in {tool.name for tool in (await client.list_tools()).tools}
            with pytest.raises(MCPError, match="Unknown tool"):
                await client.call_tool("deep__math_guy", {"user_message": {"text": "6 * 7"}})

    asyncio.run(scenario())


def test_without_keys_a_private_network_is_callable_by_name_over_rest_only(open_server: ServerProcess) -> None:
    base = open_server.http_base
    function = httpx.get(f"{base}/api/v1/{PRIVATE}/function", timeout=10)
    assert function.status_code == 200, function.text  # REST: unlisted, callable by name (neuro-san)
    listed = httpx.get(f"{base}/api/v1/list", timeout=10).json()
    assert PRIVATE not in {agent["agent_name"] for agent in listed.get("agents", [])}

    assert _card(open_server, None).status_code == 404
    assert _a2a_send(open_server, None, "6 * 7").status_code == 404

    async def scenario() -> None:
        async with mcp_client(open_server, key=None) as client:
            assert "deep__math_guy" not in {tool.name for tool in (await client.list_tools()).tools}

    asyncio.run(scenario())
