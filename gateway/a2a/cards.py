"""Agent Cards: what each public network looks like to an A2A client.

A network's card comes from its Function (description) and the concierge listing
(tags); its interfaces are the JSON-RPC binding at ``<base>/a2a/<agent>`` (1.0 and 0.3) and
the HTTP+JSON binding at ``<base>/a2a/<agent>/rest`` and, inside ``neuro-san serve``, the
gRPC binding on the gRPC port (``<host>:<grpc port>``, the network as its ``tenant``);
``<base>`` and ``<host>`` are chosen by :mod:`gateway.a2a.card_http` (never a hostile Host). The
server-wide card at ``/.well-known/agent-card.json`` is a directory: one skill per
public network, and one JSON-RPC interface at ``<base>/a2a`` where each request names its
network in ``tenant`` (no network is preferred, so a client that resolves this card must
choose one); clients usually talk to a network through its own card.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    AuthorizationCodeOAuthFlow,
    HTTPAuthSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    SecurityRequirement,
    SecurityScheme,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_CURRENT, TransportProtocol

from neuro_san import __version__

TEXT_MODES = ["text/plain", "application/json"]
SERVER_NAME = "neuro-san"


def agent_url(base: str, agent: str) -> str:
    return f"{base}/a2a/{agent}"


def _interface(url: str, binding: TransportProtocol = TransportProtocol.JSONRPC,
               version: str = PROTOCOL_VERSION_CURRENT) -> AgentInterface:
    return AgentInterface(url=url, protocol_binding=binding.value, protocol_version=version)


def network_interfaces(base: str, agent: str, grpc: str | None = None) -> list[AgentInterface]:
    """JSON-RPC (preferred, first), HTTP+JSON, gRPC at ``grpc`` (when served: the network
    is the requests' ``tenant``, which the SDK client sets from the interface), and
    JSON-RPC for 0.3 clients (the same endpoint)."""
    url = agent_url(base, agent)
    interfaces = [_interface(url), _interface(f"{url}/rest", TransportProtocol.HTTP_JSON)]
    if grpc:
        interfaces.append(AgentInterface(url=grpc, protocol_binding=TransportProtocol.GRPC.value,
                                         protocol_version=PROTOCOL_VERSION_CURRENT, tenant=agent))
    return [*interfaces, _interface(url, version=PROTOCOL_VERSION_0_3)]


def card_to_json(card: AgentCard) -> dict[str, Any]:
    """The card as JSON, with the 0.3 fields (``url``, ``preferredTransport``…) added by
    the SDK so 0.3 clients can read it too."""
    return agent_card_to_dict(card)


@dataclass(frozen=True, slots=True)
class OAuthCard:
    """What a card says about the OAuth authorization server (from its RFC 8414 metadata)."""

    metadata_url: str
    authorization_url: str
    token_url: str
    scopes: dict[str, str]


@dataclass(frozen=True, slots=True)
class CardSecurity:
    """How a caller authenticates here: API keys (bearer), OAuth 2.1, both or neither."""

    api_keys: bool = False
    oauth: OAuthCard | None = None

    @property
    def secured(self) -> bool:
        return self.api_keys or self.oauth is not None


def _secure(card: AgentCard, security: CardSecurity) -> None:
    """Say how to authenticate: each scheme is one alternative requirement (A2A ORs the
    requirements): an API key as ``Authorization: Bearer <key>``, or an OAuth access token."""
    if security.api_keys:
        card.security_schemes["bearer"].CopyFrom(SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", description="an API key of this server")
        ))
        requirement = SecurityRequirement()
        requirement.schemes["bearer"].SetInParent()
        card.security_requirements.append(requirement)
    if security.oauth is not None:
        oauth = security.oauth
        # One flow per scheme (OAuthFlows is a oneof): the authorization code with PKCE, as
        # OAuth 2.1 and MCP hosts use it.
        flows = OAuthFlows(authorization_code=AuthorizationCodeOAuthFlow(
            authorization_url=oauth.authorization_url, token_url=oauth.token_url, scopes=oauth.scopes,
            pkce_required=True))
        card.security_schemes["oauth2"].CopyFrom(SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(
            description="an OAuth 2.1 access token for this server (RFC 8707 resource: its URL)",
            flows=flows, oauth2_metadata_url=oauth.metadata_url)))
        requirement = SecurityRequirement()
        requirement.schemes["oauth2"].list.extend(sorted(oauth.scopes))
        card.security_requirements.append(requirement)


def _tags(tags: Iterable[str]) -> list[str]:
    """The concierge tags; A2A requires at least one."""
    return list(tags) or ["agent-network"]


def network_card(
    base: str, agent: str, description: str, tags: Iterable[str], security: CardSecurity, grpc: str | None = None
) -> AgentCard:
    card = AgentCard(
        name=agent,
        description=description or f"the {agent} agent network",
        version=__version__,
        provider=AgentProvider(organization=SERVER_NAME, url=base),
        supported_interfaces=network_interfaces(base, agent, grpc),
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=TEXT_MODES,
        default_output_modes=TEXT_MODES,
        skills=[AgentSkill(id=agent, name=agent, description=description or agent, tags=_tags(tags))],
    )
    if security.secured:
        _secure(card, security)
    return card


def server_card(
    base: str, agents: Iterable[tuple[str, str, list[str]]], security: CardSecurity, grpc: str | None = None
) -> AgentCard:
    listed = list(agents)
    # One endpoint per binding for all networks, with no tenant preferred: a client must choose.
    interfaces = [_interface(f"{base}/a2a")]
    if grpc:
        interfaces.append(_interface(grpc, TransportProtocol.GRPC))
    card = AgentCard(
        name=SERVER_NAME,
        description="neuro-san agent networks: each skill is a network with its own card (and interfaces) "
        f"at {base}/a2a/<network>/.well-known/agent-card.json; the interfaces below "
        "serve every network, named by each request's tenant",
        version=__version__,
        provider=AgentProvider(organization=SERVER_NAME, url=base),
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=TEXT_MODES,
        default_output_modes=TEXT_MODES,
        skills=[AgentSkill(id=name, name=name, description=description or name, tags=_tags(tags))
                for name, description, tags in listed],
    )
    if security.secured:
        _secure(card, security)
    return card
