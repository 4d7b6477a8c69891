"""AG-UI: every network as an AG-UI agent at ``POST /ag-ui/{agent}``, for front-end apps
(CopilotKit and the other clients of the agent–user interaction protocol).

A front-end on the HTTP port (see :mod:`gateway.host.frontends`) that reaches agents only
through the agents facade (:mod:`gateway.agents`). :func:`agui_frontends` is what the
composition root lists: empty when ``AGENT_AGUI_ENABLE`` is off, and otherwise loaded on
the first request (:class:`gateway.host.frontends.LazyFrontEnd`), so start-up does not
import the protocol's pydantic models.
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.agui.switch import AGUI_PATH, agui_enabled
from gateway.host.errors import status_refusal
from gateway.host.frontends import FrontEndFactory, RouteSpec, lazy_frontend

#: Before the event stream starts a refusal is a JSON Status body, as REST's: the run has
#: not started, so there is no run to end with RUN_ERROR.
AGUI_ROUTES = (RouteSpec("POST", AGUI_PATH, "ag-ui", refusal=status_refusal),)


def _load() -> FrontEndFactory:
    from gateway.agui.frontend import AguiFrontEnd

    return AguiFrontEnd


def agui_frontends(env: Mapping[str, str] | None = None) -> list[FrontEndFactory]:
    """The AG-UI front-end's factory, unless ``AGENT_AGUI_ENABLE`` turns it off."""
    return [lazy_frontend("AG-UI", AGUI_ROUTES, _load)] if agui_enabled(env) else []


__all__ = ["AGUI_PATH", "AGUI_ROUTES", "agui_enabled", "agui_frontends"]
