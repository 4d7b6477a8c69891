"""ConciergeService/List: the public networks."""

from __future__ import annotations

import grpc

from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc
from neuro_san.core.access import AccessPolicy, credentials_from_metadata
from neuro_san.core.host import AgentHost
from neuro_san.service import convert
from neuro_san.service.errors import abort_with


class ConciergeServicer(concierge_pb2_grpc.ConciergeServiceServicer):
    def __init__(self, host: AgentHost, access: AccessPolicy | None = None) -> None:
        self._host = host
        self._access = access or AccessPolicy()

    async def List(  # noqa: N802 - the generated servicer's name
        self, request: concierge_pb2.ConciergeRequest, context: grpc.aio.ServicerContext
    ) -> concierge_pb2.ConciergeResponse:
        try:
            if not self._access.enabled:
                return convert.agents_to_proto(self._host.list_agents())
            principal = self._access.authenticate(credentials_from_metadata(context.invocation_metadata() or ()))
            visible = [
                a for a in self._host.list_agents(include_private=True) if principal.may_call(a.agent_name, a.public)
            ]
            return convert.agents_to_proto(visible)
        except Exception as error:
            await abort_with(context, error)
            raise  # unreachable: abort raises
