"""Whether the OpenAI-compatible API is served: ``AGENT_OPENAI_ENABLE`` (on unless switched off)."""

from __future__ import annotations

from collections.abc import Mapping

from neuro_san.core.env_settings import env_flag
from neuro_san.settings import process_env

OPENAI_PREFIX = "/v1"


def openai_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``AGENT_OPENAI_ENABLE``: on unless switched off; a value that is not a switch is
    refused at start, not read as off."""
    return env_flag(process_env() if env is None else env, "AGENT_OPENAI_ENABLE", True)
