"""The agent runtime: runs one chat turn over an agent network.

``network_runner.NetworkRunner`` implements ``core.agent_api.AgentApi``; per request it builds a
``context.RequestContext`` and runs the front man with ``agent_loop.run_llm_agent``,
which calls tools through ``tools.call_tool``. Every kind of tool (sub-agents, coded
tools, external agents, MCP tools) is a ``tool_interface.Tool``, made for each agent by
``tool_binding.AgentToolBinder``. Nothing here knows about gRPC or HTTP.
"""
