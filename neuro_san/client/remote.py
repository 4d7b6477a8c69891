"""External agents on other servers, for the runtime: ``remote_agent(ref)``.

``grpc://host:port/name`` (or ``grpcs://``) goes over gRPC, ``http(s)://host:port/name``
through that server's HTTP gateway; the agent name is the URL's path and may contain
``/`` (``grpc://h:30011/deep/math_guy``). All references to one server share one
client, hence one channel or one session. Any failure is an
:class:`~neuro_san.core.errors.UpstreamUnavailable` that says which reference failed
and why. Closing the chat stream (the caller was cancelled) cancels the remote call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from neuro_san.client.api import AsyncAgentClient
from neuro_san.client.errors import AgentNotFound, ClientError
from neuro_san.core.errors import ConfigurationError, UpstreamUnavailable
from neuro_san.core.messages import ChatMessage, ChatRequest

if TYPE_CHECKING:
    from neuro_san.runtime.external import RemoteAgent

SCHEMES = ("grpc", "grpcs", "http", "https")
#: Function is a quick lookup; a server that does not answer it in this time is not usable.
FUNCTION_TIMEOUT_SECONDS = 30.0

_clients: dict[str, AsyncAgentClient] = {}


def remote_agent(ref: str) -> RemoteAgent:
    """The agent named by ``ref``, on the server ``ref`` names."""
    server, name = split_ref(ref)
    client = _clients.get(server)
    if client is None:
        client = _clients[server] = AsyncAgentClient.from_url(server)
    return _RemoteAgent(ref, client, name)


def split_ref(ref: str) -> tuple[str, str]:
    """``scheme://host:port/name`` → (``scheme://host:port``, ``name``)."""
    parts = urlsplit(ref)
    scheme = parts.scheme.lower()
    name = unquote(parts.path.strip("/"))
    if scheme not in SCHEMES or not parts.netloc or not name:
        raise ConfigurationError(
            f"external agent {ref!r}: expected grpc://host:port/agent or http(s)://host:port/agent"
        )
    return f"{scheme}://{parts.netloc}", name


async def close_all() -> None:
    """Close the shared clients (the server calls this, if at all, at shutdown)."""
    clients = list(_clients.values())
    _clients.clear()
    for client in clients:
        await client.close()


class _RemoteAgent:
    def __init__(self, ref: str, client: AsyncAgentClient, name: str) -> None:
        self.ref = ref
        self.client = client
        self.name = name

    async def function(self) -> Mapping[str, Any]:
        try:
            info = await self.client.function(self.name, timeout=FUNCTION_TIMEOUT_SECONDS)
        except ClientError as error:
            raise self._upstream(error) from error
        return info.to_dict()

    async def chat(self, request: ChatRequest) -> AsyncIterator[ChatMessage | None]:
        stream = self.client.chat_request(self.name, request)
        try:
            async for message in stream:
                yield message
        except ClientError as error:
            raise self._upstream(error) from error
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    def _upstream(self, error: ClientError) -> UpstreamUnavailable:
        if isinstance(error, AgentNotFound):
            why = f"no agent {self.name!r} there ({error.message})"
        else:
            why = f"{error.code.name}: {error.message}"
        return UpstreamUnavailable(f"external agent {self.ref}: {why}")
