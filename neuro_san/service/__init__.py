"""The grpc.aio service: thin servicers over ``core.agent_api.AgentApi``."""
