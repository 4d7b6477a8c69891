"""Agent Cards: what each public network looks like to an A2A client.

A network's card comes from its Function (description) and the concierge listing
(tags); its one interface is the JSON-RPC binding at ``<base>/a2a/<agent>``. The
server-wide card at ``/.well-known/agent-card.json`` is a directory: one skill per
public network, and each network's interface (with the network's name as ``tenant``)
— clients talk to a network through its own card.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_CURRENT, TransportProtocol

from neuro_san import __version__

TEXT_MODES = ["text/plain", "application/json"]
SERVER_NAME = "neuro-san"


def agent_url(base: str, agent: str) -> str:
    return f"{base}/a2a/{agent}"


def _interface(base: str, agent: str, tenant: str = "", version: str = PROTOCOL_VERSION_CURRENT) -> AgentInterface:
    return AgentInterface(
        url=agent_url(base, agent),
        protocol_binding=TransportProtocol.JSONRPC.value,
        protocol_version=version,
        tenant=tenant,
    )


def card_to_json(card: AgentCard) -> dict[str, Any]:
    """The card as JSON, with the 0.3 fields (``url``, ``preferredTransport``…) added by
    the SDK so 0.3 clients can read it too."""
    return agent_card_to_dict(card)


def _secure(card: AgentCard) -> None:
    """API keys are on: say how to send one over HTTP (``Authorization: Bearer <key>``,
    as on every route of the HTTP port)."""
    card.security_schemes["bearer"].CopyFrom(SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", description="an API key of this server")
    ))
    requirement = SecurityRequirement()
    requirement.schemes["bearer"].SetInParent()
    card.security_requirements.append(requirement)


def _tags(tags: Iterable[str]) -> list[str]:
    """The concierge tags; A2A requires at least one."""
    return list(tags) or ["agent-network"]


def network_card(base: str, agent: str, description: str, tags: Iterable[str], secured: bool) -> AgentCard:
    card = AgentCard(
        name=agent,
        description=description or f"the {agent} agent network",
        version=__version__,
        provider=AgentProvider(organization=SERVER_NAME, url=base),
        # The same endpoint answers 0.3 clients (the SDK's compatibility layer).
        supported_interfaces=[_interface(base, agent), _interface(base, agent, version=PROTOCOL_VERSION_0_3)],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=TEXT_MODES,
        default_output_modes=TEXT_MODES,
        skills=[AgentSkill(id=agent, name=agent, description=description or agent, tags=_tags(tags))],
    )
    if secured:
        _secure(card)
    return card


def server_card(base: str, agents: Iterable[tuple[str, str, list[str]]], secured: bool) -> AgentCard:
    listed = list(agents)
    card = AgentCard(
        name=SERVER_NAME,
        description="neuro-san agent networks; each skill is a network with its own card at "
        f"{base}/a2a/<network>/.well-known/agent-card.json",
        version=__version__,
        provider=AgentProvider(organization=SERVER_NAME, url=base),
        supported_interfaces=[_interface(base, name, tenant=name) for name, _, _ in listed],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=TEXT_MODES,
        default_output_modes=TEXT_MODES,
        skills=[AgentSkill(id=name, name=name, description=description or name, tags=_tags(tags))
                for name, description, tags in listed],
    )
    if secured:
        _secure(card)
    return card
