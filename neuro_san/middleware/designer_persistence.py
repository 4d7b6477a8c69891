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
definition middleware without a model call) saves the client's definition too.

Deploying the network through the reservationist (studio's
``AGENT_NETWORK_DESIGNER_USE_RESERVATIONS=true``) is refused at load (studio_config).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from neuro_san.middleware.designer_definition import DEFINITION_KEY, NAME_KEY
from neuro_san.middleware.designer_files import network_hocon, registries_dir, write_network
from neuro_san.middleware.designer_validation import (
    cycle_errors,
    keyword_errors,
    missing_node_errors,
    reachability_errors,
    shape_errors,
)
from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.middleware.studio_config import DesignerPersistenceSettings

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
        if found is None:
            return None  # nothing designed (or a load error the model reports): answer freely
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
        found = self._named_network()
        if found is None:
            return answer
        network, name = found
        if any(self._errors(network)):
            return answer  # still broken once the attempts are used: not saved, as in studio
        sly = self.invocation.ctx.sly_data
        metadata = self._metadata(sly)
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

    @staticmethod
    def _metadata(sly: Mapping[str, Any]) -> dict[str, Any]:
        """The client's block from the previous save, this turn's sample queries, the dates."""
        given = sly.get(METADATA_KEY)
        block: dict[str, Any] = dict(given) if isinstance(given, Mapping) else {}
        queries = sly.get(QUERIES_KEY)
        if isinstance(queries, list) and queries:
            block["sample_queries"] = [query for query in queries if isinstance(query, str)]
        now = datetime.now(tz=UTC).isoformat()
        block.setdefault("date_created", now)
        block["date_modified"] = now
        return block
