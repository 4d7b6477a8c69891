"""ConciergeService/List: the public networks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc
from neuro_san.core.access import AccessPolicy, credentials_from_metadata, public_directory
from neuro_san.core.agent_api import AgentApi
from neuro_san.core.internal_metadata import inbound_metadata
from neuro_san.core.messages import AgentInfo
from neuro_san.service.errors import abort_with
from neuro_san.wire import convert


async def visible_agents(
    agents: AgentApi, access: AccessPolicy, metadata: Sequence[tuple[str, Any]], public_only: bool
) -> list[AgentInfo]:
    """The networks a caller may see: with access off, or from the public directory
    (``public_only``: no credentials asked), the public ones; else those its key or token
    may call (a private one only when it names it). The one rule of every listing."""
    if not access.enabled or public_only:
        return agents.list_agents()
    principal = await access.identify(credentials_from_metadata(metadata))
    return [a for a in agents.list_agents(include_private=True) if principal.may_call(a.agent_name, a.public)]


class ConciergeServicer(concierge_pb2_grpc.ConciergeServiceServicer):
    def __init__(self, agents: AgentApi, access: AccessPolicy | None = None) -> None:
        self._agents = agents
        self._access = access or AccessPolicy()

    async def List(  # noqa: N802 - the generated servicer's name
        self, request: concierge_pb2.ConciergeRequest, context: grpc.aio.ServicerContext
    ) -> concierge_pb2.ConciergeResponse:
        try:
            metadata = inbound_metadata(context.invocation_metadata(), context.peer())  # internal keys: ours only
            visible = await visible_agents(self._agents, self._access, metadata, public_directory(metadata))
            return convert.agents_to_proto(visible)
        except Exception as error:
            await abort_with(context, error)
            raise  # unreachable: abort raises
