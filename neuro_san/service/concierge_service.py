"""ConciergeService/List: the public networks."""

from __future__ import annotations

import grpc

from neuro_san.api.grpc import concierge_pb2, concierge_pb2_grpc
from neuro_san.core.host import AgentHost
from neuro_san.service import convert
from neuro_san.service.errors import abort_with


class ConciergeServicer(concierge_pb2_grpc.ConciergeServiceServicer):
    def __init__(self, host: AgentHost) -> None:
        self._host = host

    async def List(  # noqa: N802 - the generated servicer's name
        self, request: concierge_pb2.ConciergeRequest, context: grpc.aio.ServicerContext
    ) -> concierge_pb2.ConciergeResponse:
        try:
            return convert.agents_to_proto(self._host.list_agents())
        except Exception as error:
            await abort_with(context, error)
            raise  # unreachable: abort raises
