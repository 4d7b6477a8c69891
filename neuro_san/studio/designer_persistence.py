"""neuro-san-studio's ``AgentNetworkPersistenceMiddleware``, native.

When the designer answers without tool calls and sly_data holds a definition and a name,
the definition is validated (structure and instructions, as the two validation
middlewares check it). With problems, the model is sent back with studio's text naming the
editor to call, at most ``AGENT_NETWORK_DESIGNER_MAX_VALIDATION_ATTEMPTS`` (3) times per
invocation; after that the invocation ends without saving. A sound network is written to
``<registries>/<subdirectory>/<name>.hocon`` with its manifest entry (``designer_files``),
where the hot reload picks it up, and the HOCON text and the metadata block are handed to
the client in sly_data (``agent_network_hocon_text``, ``agent_network_metadata``).

The save happens in the after-agent step, so a ``skip_designer`` turn (ended by the
definition middleware without a model call) saves the client's definition too. A turn
that only loads a network (``skip_designer`` with a file or reservation to load and no
definition) is neither validated nor saved: the loaded network goes back as it is, without
``agent_network_hocon_text``.

With ``AGENT_NETWORK_DESIGNER_USE_RESERVATIONS=true`` the network is deployed as a temporary
network instead (``designer_reservations``) and its handle set as
``sly_data["agent_reservations"]`` (``[{reservation_id, lifetime_in_seconds,
expiration_time_in_seconds}]``); the HOCON text (with a ``date_created``) and the metadata
block (no dates: a temporary network gets none) are handed back all the same. A deploy the
server refuses ends the turn with ``Error: the agent network could not be deployed as a
temporary network: <why>`` and without ``agent_reservations``, as in studio.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.studio.config import DesignerPersistenceSettings
from neuro_san.studio.designer_definition import DEFINITION_KEY, NAME_KEY, is_load_only_request
from neuro_san.studio.designer_files import network_hocon, registries_dir, write_network
from neuro_san.studio.designer_loading import RESERVATIONS_KEY, metadata_block
from neuro_san.studio.designer_reservations import DeployError, assemble_and_deploy
from neuro_san.studio.designer_validation import (
    cycle_errors,
    keyword_errors,
    missing_node_errors,
    reachability_errors,
    shape_errors,
)

log = logging.getLogger(__name__)

HOCON_TEXT_KEY = "agent_network_hocon_text"
METADATA_KEY = "agent_network_metadata"
QUERIES_KEY = "agent_network_queries"


def front_man(network: Mapping[str, Any]) -> str:
    """The one agent nobody calls (validated before): the first agent of the written file."""
    called = {
        tool
        for spec in network.values()
        if isinstance(spec, Mapping)
        for tool in spec.get("tools") or []
        if isinstance(tool, str)
    }
    return next((agent for agent in network if agent not in called), next(iter(network)))


class PersistenceMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: DesignerPersistenceSettings) -> None:
        super().__init__(invocation)
        self.settings = settings
        self.attempts = 0
        # Decided on the request as the client sent it, before the definition middleware loads.
        self.load_only = is_load_only_request(invocation.ctx.sly_data)

    def _named_network(self) -> tuple[Mapping[str, Any], str] | None:
        sly = self.invocation.ctx.sly_data
        network, name = sly.get(DEFINITION_KEY), sly.get(NAME_KEY)
        if network and isinstance(network, Mapping) and name and isinstance(name, str):
            return network, name
        return None

    @staticmethod
    def _errors(network: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        structure = shape_errors(network) + cycle_errors(network) + missing_node_errors(network)
        return structure + reachability_errors(network), keyword_errors(network)

    async def review(self, answer: str) -> str | None:
        found = self._named_network()
        if found is None or self.load_only:
            return None  # nothing designed (or a load error the model reports), or only a load: answer freely
        structure, instructions = self._errors(found[0])
        if not (structure or instructions):
            return None
        if self.attempts >= self.settings.max_attempts:
            log.warning("designer: %d validation attempts used; ending without saving", self.attempts)
            return None
        self.attempts += 1
        parts = []
        if structure:
            parts.append(
                f"The agent network definition has structural issues: {structure}. "
                "Call `agent_network_editor` to fix these structural problems."
            )
        if instructions:
            parts.append(
                f"The agent network definition has instructions-related issues: {instructions}. "
                "Call `agent_network_instructions_editor` to fix these instructions problems."
            )
        if structure and instructions:
            parts.append(
                "Fix the structural issues first by calling `agent_network_editor`, "
                "then address the instructions issues with `agent_network_instructions_editor`."
            )
        return " ".join(parts)

    async def after_agent(self, answer: str) -> str:
        sly = self.invocation.ctx.sly_data
        if self.load_only:
            sly.pop(HOCON_TEXT_KEY, None)  # any text the request carried is not this network's
        found = self._named_network()
        if found is None or self.load_only:
            return answer
        network, name = found
        if any(self._errors(network)):
            return answer  # still broken once the attempts are used: not saved, as in studio
        if self.settings.use_reservations:
            return await self._deploy(answer, network, name)
        metadata = self._metadata(sly, stamp=True)
        text = network_hocon(network, front_man(network), name, metadata, self.settings.demo_mode)
        registries = registries_dir()
        try:
            path = await asyncio.to_thread(write_network, registries, self.settings.subdirectory, name, text)
        except (ValueError, OSError) as error:
            return f"Error: the agent network {name} could not be saved: {error}"
        log.info("designer: saved agent network %s to %s", name, path)
        sly[HOCON_TEXT_KEY] = text
        sly[METADATA_KEY] = metadata
        return answer

    async def _deploy(self, answer: str, network: Mapping[str, Any], name: str) -> str:
        """Studio's reservations mode: the network served as a temporary network."""
        sly = self.invocation.ctx.sly_data
        metadata = self._metadata(sly, stamp=False)
        first = front_man(network)
        # The downloadable text always carries a creation date; the deployed network does not.
        dated = {**metadata, "date_created": metadata.get("date_created") or _now()}
        text = network_hocon(network, first, name, dated, self.settings.demo_mode)
        store = self.invocation.ctx.reservations
        demo, lifetime = self.settings.demo_mode, self.settings.lifetime_seconds
        try:
            reservations = await assemble_and_deploy(store, network, first, name, metadata, demo, lifetime)
        except DeployError as error:
            log.error("designer: agent network %s could not be deployed as a temporary network: %s", name, error)
            # A handle the request carried points at an earlier version: not handed back as this one's.
            sly.pop(RESERVATIONS_KEY, None)
            answer = f"Error: the agent network could not be deployed as a temporary network: {error}"
        else:
            log.info("designer: deployed agent network %s as %s", name, reservations[0]["reservation_id"])
            sly[RESERVATIONS_KEY] = reservations
        # Both describe the design, not the deploy: handed back even when the deploy failed.
        sly[HOCON_TEXT_KEY] = text
        sly[METADATA_KEY] = metadata
        return answer

    @staticmethod
    def _metadata(sly: Mapping[str, Any], stamp: bool) -> dict[str, Any]:
        """The client's block from the previous save, this turn's sample queries, and (for a
        file, ``stamp``) the dates."""
        # Without the keys reservation storage owns: they describe one earlier deployment.
        block = metadata_block(sly.get(METADATA_KEY))
        queries = sly.get(QUERIES_KEY)
        if isinstance(queries, list) and queries:
            block["sample_queries"] = [query for query in queries if isinstance(query, str)]
        if stamp:
            now = _now()
            block.setdefault("date_created", now)
            block["date_modified"] = now
        return block


def _now() -> str:
    return datetime.now(tz=UTC).isoformat()
