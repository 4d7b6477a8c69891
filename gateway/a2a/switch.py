"""What ``neuro-san serve`` needs to know about A2A before loading it: whether
``AGENT_A2A_ENABLE`` turns it on (importing the front-end pulls in the a2a-sdk, which is
left to its first request)."""

from __future__ import annotations

from collections.abc import Mapping

from neuro_san.core.env_settings import env_flag
from neuro_san.settings import process_env

A2A_ENABLE_ENV = "AGENT_A2A_ENABLE"


def a2a_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``AGENT_A2A_ENABLE``: on unless switched off; anything that is not a switch is refused,
    since a misspelt "off" must not leave A2A served."""
    return env_flag(process_env() if env is None else env, A2A_ENABLE_ENV, True)
