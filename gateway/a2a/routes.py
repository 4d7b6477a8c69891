"""The paths the A2A front-end serves, declared before its package (the SDK) is loaded."""

from aiohttp import web

from gateway.host.errors import GatewayError, jsonrpc_refusal, status_refusal
from gateway.host.frontends import RouteSpec

#: The HTTP+JSON binding's one media type, for its answers and its errors alike (the SDK
#: answers success with it and errors as application/json: A2A clients saw two).
A2A_MEDIA_TYPE = "application/a2a+json"


def a2a_typed(response: web.Response) -> web.Response:
    """An answer of the HTTP+JSON binding in the binding's one media type."""
    response.headers["Content-Type"] = A2A_MEDIA_TYPE
    return response


def rest_refusal(error: GatewayError) -> web.Response:
    """A refusal the host decides on the HTTP+JSON binding: a Status body, as on the REST
    API, in the binding's media type."""
    return a2a_typed(status_refusal(error))


#: The cards stay readable while the server drains; the JSON-RPC binding is refused (503,
#: -32002) and, like every refusal the host decides, phrased as a JSON-RPC error.
_CARDS_AND_JSONRPC = (
    RouteSpec("GET", "/.well-known/agent-card.json", "a2a_server_card", drains=False),
    # The public key of signed push notifications (AGENT_A2A_PUSH_SIGNING_KEY_FILE).
    RouteSpec("GET", "/.well-known/jwks.json", "a2a_jwks", drains=False),
    RouteSpec("GET", "/a2a/{agent}/.well-known/agent-card.json", "a2a_agent_card", drains=False),
    RouteSpec("GET", "/a2a/{agent}/.well-known/agent.json", "a2a_agent_card_v03", drains=False),
    RouteSpec("POST", "/a2a/{agent}", "a2a_jsonrpc", refusal=jsonrpc_refusal),
    # The server-wide card's one interface: JSON-RPC, the network named by the request's ``tenant``.
    RouteSpec("POST", "/a2a", "a2a_jsonrpc_tenant", refusal=jsonrpc_refusal),
)

#: The HTTP+JSON (REST) binding of each network, under ``/a2a/<network>/rest`` (the a2a-sdk's
#: REST routes); refusals the host decides are Status bodies, as on the REST API, typed
#: :data:`A2A_MEDIA_TYPE` like every answer of the binding.
REST_PREFIX = "/rest"
A2A_REST_PATHS = (
    ("POST", "/message:send"), ("POST", "/message:stream"), ("POST", "/tasks/{id}:cancel"),
    ("GET", "/tasks/{id}:subscribe"), ("POST", "/tasks/{id}:subscribe"), ("GET", "/tasks/{id}"), ("GET", "/tasks"),
    ("GET", "/tasks/{id}/pushNotificationConfigs/{push_id}"),
    ("DELETE", "/tasks/{id}/pushNotificationConfigs/{push_id}"),
    ("POST", "/tasks/{id}/pushNotificationConfigs"), ("GET", "/tasks/{id}/pushNotificationConfigs"),
)
A2A_ROUTES: tuple[RouteSpec, ...] = (
    *_CARDS_AND_JSONRPC,
    *(RouteSpec(method, f"/a2a/{{agent}}{REST_PREFIX}{path}", "a2a_rest", refusal=rest_refusal)
      for method, path in A2A_REST_PATHS),
)
