"""neuro-san-studio's ``AgentNetworkDefinitionMiddleware``, native.

The Agent Network Designer keeps the network being designed in the request's sly_data,
``agent_network_definition`` (``{agent name: {instructions, description, tools}}``), under
the name ``agent_network_name``; the editor tools (coded tools of the designer's
subnetworks) change it between model calls. Before each model call this middleware:

- ends the invocation with studio's error text when the name is missing or not a string,
  or the definition is not a dict;
- ends it with ``The network <name> has been modified by the user.`` when the client sent
  ``skip_designer: true`` with a definition and a name (a manual edit to be saved: the
  persistence middleware's after-agent step saves it, no model call);
- otherwise shows the definition to the model: ``## Current Agent Network Definition``
  and the definition as indented JSON, added to the system prompt of that call, and (with
  ``progress_reporter``) reports it as AGENT_PROGRESS ``{agent_network_definition,
  agent_network_name}``.

Not implemented (docs/compatibility.md): loading the network to edit from
``agent_network_hocon_file`` or from an ``agent_reservations`` handle (answered with an
error saying so), the connectivity-list form of the definition, and studio's stripping of
the common instructions from a definition sent back by the client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from neuro_san.core.messages import MessageType
from neuro_san.middleware.interface import AgentAnswered, AgentMiddleware, Invocation, ModelTurn

DEFINITION_KEY = "agent_network_definition"
NAME_KEY = "agent_network_name"
HOCON_FILE_KEY = "agent_network_hocon_file"
RESERVATIONS_KEY = "agent_reservations"
SKIP_DESIGNER_KEY = "skip_designer"


def definition_prompt(network: Mapping[str, Any]) -> str:
    """The system-prompt section that shows the model the network being designed."""
    return f"## Current Agent Network Definition\n\n```json\n{json.dumps(network, indent=2)}\n```"


class DefinitionMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, report_progress: bool) -> None:
        super().__init__(invocation)
        self.report_progress = report_progress

    @property
    def sly_data(self) -> dict[str, Any]:
        return self.invocation.ctx.sly_data

    def _check(self) -> Mapping[str, Any] | None:
        """The definition to show, or None; raises AgentAnswered with the reason to stop."""
        sly = self.sly_data
        network = sly.get(DEFINITION_KEY)
        name = sly.get(NAME_KEY)
        if not network and (sly.get(HOCON_FILE_KEY) or sly.get(RESERVATIONS_KEY)):
            raise AgentAnswered(
                f'Error: loading a network from "{HOCON_FILE_KEY}" or "{RESERVATIONS_KEY}" is not supported on this '
                f'server; send the network as "{DEFINITION_KEY}" with its "{NAME_KEY}".'
            )
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
                f'To edit an existing agent network, provide both "{DEFINITION_KEY}" and "{NAME_KEY}" in sly_data.'
            )
        if sly.get(SKIP_DESIGNER_KEY) is True:
            raise AgentAnswered(f"The network {name} has been modified by the user.")
        return network

    async def before_model(self, turn: ModelTurn) -> None:
        network = self._check()
        if network is not None and self.report_progress:
            structure = {DEFINITION_KEY: network, NAME_KEY: self.sly_data[NAME_KEY]}
            self.invocation.ctx.emit(MessageType.AGENT_PROGRESS, self.invocation.origin, "", structure=structure)

    async def system_prompt(self) -> str | None:
        network = self.sly_data.get(DEFINITION_KEY)
        # Computed per call: the editor tools change the definition between model calls.
        return definition_prompt(network) if network and isinstance(network, Mapping) else None
