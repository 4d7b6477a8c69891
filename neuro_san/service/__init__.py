"""The grpc.aio service: thin servicers over ``core.host.AgentHost``."""
