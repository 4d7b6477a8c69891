"""The paths the A2A front-end serves, declared before its package (the SDK) is loaded."""

from gateway.host.errors import jsonrpc_refusal
from gateway.host.frontends import RouteSpec

#: The cards stay readable while the server drains; the JSON-RPC binding is refused (503,
#: -32002) and, like every refusal the host decides, phrased as a JSON-RPC error.
A2A_ROUTES = (
    RouteSpec("GET", "/.well-known/agent-card.json", "a2a_server_card", drains=False),
    RouteSpec("GET", "/a2a/{agent}/.well-known/agent-card.json", "a2a_agent_card", drains=False),
    RouteSpec("GET", "/a2a/{agent}/.well-known/agent.json", "a2a_agent_card_v03", drains=False),
    RouteSpec("POST", "/a2a/{agent}", "a2a_jsonrpc", refusal=jsonrpc_refusal),
)
