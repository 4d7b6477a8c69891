"""ConciergeService/List: the public networks."""

from __future__ import annotations

import grpc

from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc
from neuro_san.core.access import AccessPolicy, credentials_from_metadata, public_directory
from neuro_san.core.host import AgentHost
from neuro_san.core.internal_metadata import inbound_metadata
from neuro_san.core.mcp_listing import mcp_listing, wants_mcp_listing
from neuro_san.service.errors import abort_with
from neuro_san.wire import convert


class ConciergeServicer(concierge_pb2_grpc.ConciergeServiceServicer):
    def __init__(self, host: AgentHost, access: AccessPolicy | None = None) -> None:
        self._host = host
        self._access = access or AccessPolicy()

    async def List(  # noqa: N802 - the generated servicer's name
        self, request: concierge_pb2.ConciergeRequest, context: grpc.aio.ServicerContext
    ) -> concierge_pb2.ConciergeResponse:
        try:
            metadata = inbound_metadata(context.invocation_metadata(), context.peer())  # internal keys: ours only
            if not self._access.enabled or public_directory(metadata):  # the public directory: no credentials
                visible = self._host.list_agents()
            else:
                principal = await self._access.identify(credentials_from_metadata(metadata))
                everything = self._host.list_agents(include_private=True)
                visible = [a for a in everything if principal.may_call(a.agent_name, a.public)]
            if wants_mcp_listing(metadata):
                visible = mcp_listing(visible)
            return convert.agents_to_proto(visible)
        except Exception as error:
            await abort_with(context, error)
            raise  # unreachable: abort raises
