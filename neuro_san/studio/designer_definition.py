"""neuro-san-studio's ``AgentNetworkDefinitionMiddleware``, native.

The Agent Network Designer keeps the network being designed in the request's sly_data,
``agent_network_definition`` (``{agent name: {instructions, description, tools}}``), under
the name ``agent_network_name``; the editor tools (coded tools of the designer's
subnetworks) change it between model calls. Before each model call this middleware:

- without a definition in sly_data, loads the network the client names in
  ``agent_network_hocon_file`` or ``agent_reservations`` (``designer_loading``): its
  definition, name and metadata block go into sly_data, where the model and the
  persistence middleware find them; a load that fails ends the invocation with studio's
  error text;
- clears the definition's instructions of copies of the common instructions a save adds
  (``designer_instructions``), as studio does, so a loaded or sent-back network does not
  gain one more copy with each save;
- ends the invocation with studio's error text when the name is missing or not a string,
  or the definition is not a dict, or a load-only request loaded nothing;
- ends it when the client sent ``skip_designer: true`` (no model call): with its own
  definition, ``The network <name> has been modified by the user.`` (a manual edit the
  persistence middleware's after-agent step saves); with a network to load instead,
  ``The network <name> has been loaded.`` (handed back, not saved);
- otherwise shows the definition to the model: ``## Current Agent Network Definition``
  and the definition as indented JSON, added to the system prompt of that call, and (with
  ``progress_reporter``) reports it as AGENT_PROGRESS ``{agent_network_definition,
  agent_network_name}``.

Not implemented (docs/compatibility.md): the connectivity-list form of the definition.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from neuro_san.core.messages import MessageType
from neuro_san.middleware.interface import AgentAnswered, AgentMiddleware, Invocation, ModelTurn
from neuro_san.studio.designer_instructions import common_instructions
from neuro_san.studio.designer_loading import (
    HOCON_FILE_KEY,
    METADATA_KEY,
    RESERVATION_ID,
    RESERVATIONS_KEY,
    Loaded,
    LoadError,
    load_file,
    load_reservation,
    reservation_id,
)

log = logging.getLogger(__name__)

DEFINITION_KEY = "agent_network_definition"
NAME_KEY = "agent_network_name"
SKIP_DESIGNER_KEY = "skip_designer"


def is_load_only_request(sly: Mapping[str, Any]) -> bool:
    """Studio's rule, read on the request as the client sent it: ``skip_designer`` with no
    definition and a network to load means "hand that network back", nothing is saved."""
    if sly.get(SKIP_DESIGNER_KEY) is not True or sly.get(DEFINITION_KEY):
        return False
    return bool(sly.get(HOCON_FILE_KEY) or sly.get(RESERVATIONS_KEY))


def definition_prompt(network: Mapping[str, Any]) -> str:
    """The system-prompt section that shows the model the network being designed."""
    return f"## Current Agent Network Definition\n\n```json\n{json.dumps(network, indent=2)}\n```"


class DefinitionMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, report_progress: bool) -> None:
        super().__init__(invocation)
        self.report_progress = report_progress
        # Decided before anything loads: a load caches the definition in sly_data.
        self.load_only = is_load_only_request(self.sly_data)
        self._load_tried = False
        self._load_error: str | None = None

    @property
    def sly_data(self) -> dict[str, Any]:
        return self.invocation.ctx.sly_data

    async def _load(self) -> Loaded | None:
        """The network the client names, when it sent no definition; None when it names none."""
        sly = self.sly_data
        if sly.get(HOCON_FILE_KEY):
            return await load_file(sly[HOCON_FILE_KEY])
        found = reservation_id(sly.get(RESERVATIONS_KEY))
        if found is None:
            return None
        return await load_reservation(found, self.invocation.ctx.reservations)

    async def _ensure_loaded(self) -> None:
        """Load the named network once, at the first hook of the first model call (the chain
        asks for the system prompt before ``before_model``, and the prompt must show it)."""
        if self._load_tried:
            return
        self._load_tried = True
        sly = self.sly_data
        if sly.get(DEFINITION_KEY):
            return  # the client's definition wins over a file or reservation it also names
        try:
            loaded = await self._load()
        except LoadError as error:
            self._load_error = str(error)
            return
        if loaded is not None:
            # Cached for the next model calls, the editor tools and the persistence middleware.
            sly[DEFINITION_KEY], sly[NAME_KEY], sly[METADATA_KEY] = loaded
        elif self.load_only:
            self._load_error = (
                f'Error: nothing was loaded. With "{SKIP_DESIGNER_KEY}" and no "{DEFINITION_KEY}", send '
                f'"{HOCON_FILE_KEY}", or "{RESERVATIONS_KEY}" with a "{RESERVATION_ID}" in its last entry.'
            )

    async def _prepare(self) -> None:
        """Before each model call (from whichever hook the chain calls first): the named
        network loaded, and the definition cleared of the common instructions a save adds."""
        await self._ensure_loaded()
        network = self.sly_data.get(DEFINITION_KEY)
        if network and isinstance(network, Mapping):
            stripped = (await common_instructions()).strip_definition(network)
            if stripped is not None:
                log.info("designer: removed copies of the common instructions from %s", self.sly_data.get(NAME_KEY))
                self.sly_data[DEFINITION_KEY] = stripped

    async def _check(self) -> Mapping[str, Any] | None:
        """The definition to show, or None; raises AgentAnswered with the reason to stop."""
        await self._prepare()
        if self._load_error is not None:
            raise AgentAnswered(self._load_error)
        sly = self.sly_data
        network = sly.get(DEFINITION_KEY)
        name = sly.get(NAME_KEY)
        if name is not None and not isinstance(name, str):
            raise AgentAnswered(f"Error: {NAME_KEY} has to be str. Got {type(name).__name__}")
        if not network:
            return None
        if not isinstance(network, Mapping):
            raise AgentAnswered(
                f'Error: "{DEFINITION_KEY}" must be a dict of agents ({{name: {{instructions, description, '
                f"tools}}}}), not {type(network).__name__} (the connectivity-list form is not supported on this "
                "server)."
            )
        if not name:
            raise AgentAnswered(
                f'Error: "{NAME_KEY}" is missing from sly_data.\n'
                f'To edit an existing agent network, provide both "{DEFINITION_KEY}" and "{NAME_KEY}" in sly_data.\n'
                f'Alternatively, provide the network via "{HOCON_FILE_KEY}" or "{RESERVATIONS_KEY}" '
                f'(with "{RESERVATION_ID}"), which supply the name automatically.'
            )
        if sly.get(SKIP_DESIGNER_KEY) is True:
            if self.load_only:
                raise AgentAnswered(f"The network {name} has been loaded.")
            raise AgentAnswered(f"The network {name} has been modified by the user.")
        return network

    async def before_model(self, turn: ModelTurn) -> None:
        network = await self._check()
        if network is not None and self.report_progress:
            structure = {DEFINITION_KEY: network, NAME_KEY: self.sly_data[NAME_KEY]}
            self.invocation.ctx.emit(MessageType.AGENT_PROGRESS, self.invocation.origin, "", structure=structure)

    async def system_prompt(self) -> str | None:
        await self._prepare()
        network = self.sly_data.get(DEFINITION_KEY)
        # Computed per call: the editor tools change the definition between model calls.
        return definition_prompt(network) if network and isinstance(network, Mapping) else None
