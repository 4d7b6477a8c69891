"""What the composition root needs to know about the AG-UI front-end before loading it:
its path and whether ``AGENT_AGUI_ENABLE`` turns it on (the ``ag-ui-protocol`` models are
imported on its first request)."""

from __future__ import annotations

from collections.abc import Mapping

from neuro_san.core.env_settings import env_flag
from neuro_san.settings import process_env

#: One AG-UI agent per network: ``POST /ag-ui/{agent}`` runs it.
AGUI_PATH = "/ag-ui/{agent}"


def agui_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``AGENT_AGUI_ENABLE``: on unless switched off; a value that is not a switch is
    refused at start (a typo must not hide the routes silently)."""
    return env_flag(process_env() if env is None else env, "AGENT_AGUI_ENABLE", True)
