"""Deploying a designed network as a temporary network, for neuro-san-studio's
``AgentNetworkPersistenceMiddleware`` with ``AGENT_NETWORK_DESIGNER_USE_RESERVATIONS=true``.

Instead of a file under ``registries/generated``, the network is assembled as a network
dict (studio's deployable form: no includes and no substitutions left) and deployed through
this server's reservations (:class:`StoreReservationist` on the request's
:class:`ReservationStore`) under ``<name without '/', ':' and ' '>-<uuid4>`` for
``AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS`` (an hour by default). The
reservation id is then an agent name this server answers to until it expires.

The dict holds what the written file would serve: the project's
``config/llm_config.hocon`` merged at the top (as the file's include merges it),
``max_execution_seconds: 600``, the metadata block when it says anything, and the agents
front man first, their instructions built from the same pieces as the file's
(``instructions_prefix``, the front man's lines, the demo sentence, and
``registries/aaosa.hocon``'s ``aaosa_instructions`` and ``aaosa_call``). Both project files
are read from the working directory, the project root of ``ns run``, where studio reads them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.files import read_document
from neuro_san.reservations.reservationist import StoreReservationist
from neuro_san.reservations.store import ReservationError, ReservationStore
from neuro_san.studio.designer_files import (
    DEFAULT_FRONT_DESCRIPTION,
    DEMO_SENTENCE,
    FRONT_MAN_LINES,
    MAX_EXECUTION_SECONDS,
    agent_tools,
    clean_text,
    instructions_prefix,
)

AAOSA_FILE = "registries/aaosa.hocon"
LLM_CONFIG_FILE = "config/llm_config.hocon"
#: Studio's default lifetime of a designed temporary network: an hour.
DEFAULT_LIFETIME_SECONDS = 60.0 * 60.0


class DeployError(Exception):
    """The network could not be deployed; ``str(error)`` says why."""


def reservation_prefix(name: str) -> str:
    """The name as a reservation prefix: studio removes what a reservation id may not hold."""
    for char in ("/", ":", " "):
        name = name.replace(char, "")
    return name


def _project_file(relative: str) -> Mapping[str, Any]:
    path = Path(relative)
    if not path.is_file():
        raise DeployError(f"{relative} not found in the working directory {Path.cwd()}")
    try:
        document = read_document(path)
    except NetworkLoadError as error:
        raise DeployError(str(error)) from None
    if not isinstance(document, Mapping):
        raise DeployError(f"{relative}: the top level must be a dict")
    return document


def project_parts() -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The AAOSA substitutions and the LLM configuration file of the project. Blocking I/O."""
    return _project_file(AAOSA_FILE), _project_file(LLM_CONFIG_FILE)


def _agent(
    name: str, spec: Mapping[str, Any], front_man: bool, prefix: str, aaosa: Mapping[str, Any], demo_mode: bool
) -> dict[str, Any]:
    tools, instructions = agent_tools(spec), clean_text(spec.get("instructions"))
    description = clean_text(spec.get("description"))
    if not front_man and not tools and not instructions:
        return {"name": name, "toolbox": name}  # no instructions: a toolbox tool of its own name
    call = aaosa.get("aaosa_call")
    function = dict(call) if isinstance(call, Mapping) else {}
    function["description"] = (description or DEFAULT_FRONT_DESCRIPTION) if front_man else description
    delegation = aaosa.get("aaosa_instructions")
    delegation = delegation if isinstance(delegation, str) else ""
    agent: dict[str, Any] = {"name": name, "function": function}
    if front_man:
        agent["instructions"] = f"{prefix} {FRONT_MAN_LINES}\n{instructions} {delegation}"
        agent["tools"] = tools
    elif tools:
        agent["instructions"] = f"{prefix} {instructions} {delegation}"
        agent["tools"] = tools
    else:
        demo = f" {DEMO_SENTENCE}" if demo_mode else ""
        agent["instructions"] = f"{prefix}{demo} {instructions}"
    return agent


def deployable_network(
    network: Mapping[str, Any],
    front_man: str,
    name: str,
    metadata: Mapping[str, Any],
    demo_mode: bool,
    parts: tuple[Mapping[str, Any], Mapping[str, Any]],
) -> dict[str, Any]:
    """The network dict deployed for the designed ``network`` (see the module text)."""
    aaosa, llm_file = parts
    prefix = instructions_prefix(name)
    document: dict[str, Any] = dict(llm_file)
    document["max_execution_seconds"] = MAX_EXECUTION_SECONDS
    if metadata:
        document["metadata"] = dict(metadata)
    order = [front_man, *(agent for agent in network if agent != front_man)]
    document["tools"] = [_agent(agent, network[agent], agent == front_man, prefix, aaosa, demo_mode) for agent in order]
    return document


async def deploy(
    store: ReservationStore | None, document: Mapping[str, Any], prefix: str, lifetime: float
) -> list[dict[str, Any]]:
    """Deploy ``document`` as a temporary network; the ``agent_reservations`` entries for the
    client. Raises :class:`DeployError` with the reason when the server refuses it."""
    if store is None:
        raise DeployError("this server keeps no reservations")
    reservationist = StoreReservationist(store)
    reservation = await reservationist.reserve(lifetime_in_seconds=lifetime, prefix=prefix)
    try:
        async with reservationist:
            event = await reservationist.deploy({reservation: dict(document)}, confirmation=True)
        if event is not None:
            await event.wait()
    except (NetworkLoadError, ReservationError, TypeError, ValueError) as error:
        raise DeployError(str(error)) from None
    return [
        {
            "reservation_id": reservation.get_reservation_id(),
            "lifetime_in_seconds": reservation.get_lifetime_in_seconds(),
            "expiration_time_in_seconds": reservation.get_expiration_time_in_seconds(),
        }
    ]


async def assemble_and_deploy(
    store: ReservationStore | None,
    network: Mapping[str, Any],
    front_man: str,
    name: str,
    metadata: Mapping[str, Any],
    demo_mode: bool,
    lifetime: float,
) -> list[dict[str, Any]]:
    parts = await asyncio.to_thread(project_parts)
    document = deployable_network(network, front_man, name, metadata, demo_mode, parts)
    return await deploy(store, document, reservation_prefix(name), lifetime)
