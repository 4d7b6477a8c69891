"""The agents facade: how a non-REST front-end (MCP, A2A, and the next ones) talks to agents.

A front-end describes one user turn (:class:`~gateway.agents.interface.Turn`) and reads
typed events back (answer deltas, thinking steps, the final answer, a failure), never a
protobuf stream nor a grpc exception. The implementation
(:class:`~gateway.agents.invoked.InvokedAgents`) calls ``AgentService/StreamingChat``
through the invoker, so authentication, admission, limits, request ids, metrics and logs
stay the service layer's. REST does not use it: it transcodes the protos as they are.
"""
