"""The registry of middleware implementations: the run-time half.

A loaded ``middleware`` entry carries the settings its class's parser made
(:mod:`neuro_san.network.middleware_registry`, the load-time half). Here each settings type
names the function that builds the instance for one invocation; the chain asks
:func:`build` and names no class. neuro-san's own middleware is registered at the end of
this module; an application's (neuro-san-studio's, :mod:`neuro_san.studio.plugin`) is
registered by whoever composes the server, together with its load-time half.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.middleware.network_copy import NetworkCopyMiddleware
from neuro_san.middleware.pii import PiiMiddleware
from neuro_san.middleware.summarization import SummarizationMiddleware
from neuro_san.middleware.tool_selection import ToolSelectionMiddleware
from neuro_san.network.middleware_config import (
    MiddlewareConfig,
    NetworkCopySettings,
    PiiSettings,
    SummarizationSettings,
    ToolSelectionSettings,
)

S = TypeVar("S")
#: Settings of one entry and the invocation → the middleware instance.
Builder = Callable[[Invocation, Any], AgentMiddleware]

_BUILDERS: dict[type, Builder] = {}


def register(settings_type: type[S], build: Callable[[Invocation, S], AgentMiddleware]) -> None:
    """Build entries whose settings are a ``settings_type`` with ``build``; a type taken is refused."""
    if settings_type in _BUILDERS:
        raise ValueError(f"middleware settings {settings_type.__name__} have a builder already")
    _BUILDERS[settings_type] = build


def unregister(settings_type: type) -> None:
    _BUILDERS.pop(settings_type, None)


def lookup(settings_type: type) -> Builder | None:
    return _BUILDERS.get(settings_type)


def build(config: MiddlewareConfig, invocation: Invocation) -> AgentMiddleware:
    """The instance of ``config`` for ``invocation``."""
    builder = _BUILDERS.get(type(config.settings))
    if builder is None:
        # The loader accepted a class whose implementation nobody registered: a composition
        # fault (the load-time half registered without this one), not bad input.
        raise LookupError(f"middleware {config.class_name} has no implementation registered in this process")
    return builder(invocation, config.settings)


register(PiiSettings, PiiMiddleware)
register(SummarizationSettings, SummarizationMiddleware)
register(ToolSelectionSettings, ToolSelectionMiddleware)
register(NetworkCopySettings, lambda invocation, settings: NetworkCopyMiddleware(invocation))
