"""What ``neuro-san serve`` needs to know about A2A before loading it: whether
``AGENT_A2A_ENABLE`` turns it on (importing the front-end pulls in the a2a-sdk, which is
left to its first request)."""

from __future__ import annotations

import os
from collections.abc import Mapping

A2A_ENABLE_ENV = "AGENT_A2A_ENABLE"


def a2a_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``AGENT_A2A_ENABLE``: ``true`` (the default) or ``false``; anything else is refused,
    since a misspelt "off" must not leave A2A served."""
    raw = (os.environ if env is None else env).get(A2A_ENABLE_ENV, "true")
    value = raw.strip().lower() or "true"
    if value not in ("true", "false"):
        raise ValueError(f"{A2A_ENABLE_ENV} must be true or false, not {raw!r}")
    return value == "true"
