"""DirectoryService/List: the caller's networks with what a front-end offers of each, in one call.

Not in neuro-san, and not on REST (its proto has no ``google.api.http`` rule): the server's
own front-ends (MCP's ``tools/list``, A2A's cards) read it through the gateway's invoker.
Who sees what is ConciergeService/List's rule (:func:`visible_agents`); each entry adds the
MCP tool name the manifest gives the network and its front man's function (what
AgentService/Function answers), so a listing of N networks is one call, not N + 1.
``version`` is a digest of the answer: a front-end that keeps a listing can tell it changed.
"""

from __future__ import annotations

import hashlib

import grpc

from neuro_san.api.grpc import directory_pb2, directory_pb2_grpc
from neuro_san.core.access import AccessPolicy
from neuro_san.core.agent_api import AgentApi
from neuro_san.core.errors import AgentNotFound
from neuro_san.core.internal_metadata import from_own_gateway, inbound_metadata
from neuro_san.service.concierge_service import visible_agents
from neuro_san.service.errors import abort_with
from neuro_san.wire import convert


class DirectoryServicer(directory_pb2_grpc.DirectoryServiceServicer):
    def __init__(self, agents: AgentApi, access: AccessPolicy | None = None) -> None:
        self._agents = agents
        self._access = access or AccessPolicy()

    async def List(  # noqa: N802 - the generated servicer's name
        self, request: directory_pb2.DirectoryRequest, context: grpc.aio.ServicerContext
    ) -> directory_pb2.DirectoryResponse:
        try:
            raw = context.invocation_metadata()
            metadata = inbound_metadata(raw, context.peer())
            # The public directory answers without credentials: believed from our gateway only,
            # as the privileged metadata is; anyone else is answered as an ordinary caller.
            public_only = request.public_directory and from_own_gateway(raw, context.peer())
            response = directory_pb2.DirectoryResponse()
            for info in await visible_agents(self._agents, self._access, metadata, public_only):
                try:
                    function = convert.function_to_proto(self._agents.function(info.agent_name)).function
                except AgentNotFound:
                    continue  # removed by a reload between the listing and this line
                response.entries.add(agent_name=info.agent_name, description=info.description, tags=list(info.tags),
                                     mcp_tool=info.mcp_tool or "", function=function)
            response.version = hashlib.sha256(response.SerializeToString(deterministic=True)).hexdigest()[:32]
            return response
        except Exception as error:
            await abort_with(context, error)
            raise  # unreachable: abort raises
