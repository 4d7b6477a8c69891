"""The OpenAI-compatible API (``/v1``): models, chat completions, responses.

:func:`openai_frontends` is what the composition root lists: the front-end's factory,
or nothing when ``AGENT_OPENAI_ENABLE`` switches it off. It imports no SDK, so it is
mounted as it is (no :class:`~gateway.host.frontends.LazyFrontEnd`).
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.host.frontends import FrontEndFactory
from gateway.openai.frontend import OpenAiFrontEnd, make_frontend
from gateway.openai.switch import OPENAI_PREFIX, openai_enabled


def openai_frontends(env: Mapping[str, str] | None = None) -> list[FrontEndFactory]:
    """The OpenAI front-end's factory, unless ``AGENT_OPENAI_ENABLE`` turns it off."""
    return [make_frontend] if openai_enabled(env) else []


__all__ = ["OPENAI_PREFIX", "OpenAiFrontEnd", "openai_enabled", "openai_frontends"]
