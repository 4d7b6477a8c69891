"""The registry of middleware implementations: the run-time half.

A loaded ``middleware`` entry carries the settings its class's parser made
(:mod:`neuro_san.network.middleware_registry`, the load-time half). Here each settings type
names the function that builds the instance for one invocation; the chain asks
:func:`build` and names no class. neuro-san's own middleware is registered at the end of
this module; an application's (neuro-san-studio's, :mod:`neuro_san.studio.plugin`) is
plugged into both halves at once with :func:`plug_in`, by whoever composes the server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.middleware.network_copy import NetworkCopyMiddleware
from neuro_san.middleware.pii import PiiMiddleware
from neuro_san.middleware.summarization import SummarizationMiddleware
from neuro_san.middleware.tool_selection import ToolSelectionMiddleware
from neuro_san.network import middleware_registry
from neuro_san.network.middleware_config import (
    MiddlewareConfig,
    NetworkCopySettings,
    PiiSettings,
    SummarizationSettings,
    ToolSelectionSettings,
)
from neuro_san.network.middleware_registry import MiddlewareClass

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


def plug_in(classes: Iterable[MiddlewareClass], builders: Iterable[tuple[type, Builder]]) -> None:
    """Register an application's classes in both halves at once: its ``classes`` with the
    network loader, its ``builders`` here. Nothing is registered when a name or a
    settings type is taken already (the ValueError says which)."""
    classes, builders = tuple(classes), tuple(builders)
    taken = [name for c in classes for name in c.names if middleware_registry.lookup(name) is not None]
    if taken:
        raise ValueError(f"middleware class {taken[0]!r} is registered already")
    for settings_type, _ in builders:
        if settings_type in _BUILDERS:
            raise ValueError(f"middleware settings {settings_type.__name__} have a builder already")
    for settings_type, builder in builders:
        register(settings_type, builder)
    for middleware_class in classes:
        middleware_registry.register(middleware_class)


def unplug(classes: Iterable[MiddlewareClass], builders: Iterable[tuple[type, Builder]]) -> None:
    """Undo :func:`plug_in` (networks loaded already keep their instances' settings)."""
    for middleware_class in classes:
        middleware_registry.unregister(middleware_class)
    for settings_type, _ in builders:
        unregister(settings_type)


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
