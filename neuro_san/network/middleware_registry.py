"""The registry of middleware classes a network file may name: the load-time half.

Each :class:`MiddlewareClass` says which ``class`` paths it answers to (every path
neuro-san or neuro-san-studio documents for it) and how its entry's ``args`` become
settings. The network loader consults only this registry, so it names no class and
imports nothing that runs one. neuro-san's own classes register themselves when
:mod:`neuro_san.network.middleware_config` is imported; applications built on the server
(neuro-san-studio's, :mod:`neuro_san.studio.plugin`) are registered by whoever composes the
server (the command line, a test's set-up). The run-time half, settings → instance, is
:mod:`neuro_san.middleware.registry`: the implementations sit above the loader, so one
registry cannot hold both halves without the loader importing them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from neuro_san.network.middleware_args import MiddlewareArgs


@dataclass(frozen=True, slots=True)
class EntryContext:
    """What a parser may need of the entry beyond its ``args``."""

    file: str
    #: The entry's key path (``agents[0].middleware[1]``).
    key_path: str
    #: The entry says ``"allow": {"reservations": true}``.
    reservations: bool


@dataclass(frozen=True, slots=True)
class MiddlewareClass:
    """One middleware class network files may name, checked at load."""

    #: The ``class`` paths that name it; the first is the one messages use.
    names: tuple[str, ...]
    #: The entry's ``args`` (read through ``check``, which refuses unread keys at
    #: ``check.finish()``) → a frozen settings object. Raises NetworkLoadError.
    parse: Callable[[MiddlewareArgs, EntryContext], Any]
    #: The name LangChain gives the instance; two entries with one name are refused.
    instance_name: Callable[[Any], str]
    #: The entry may say ``"allow": {"reservations": true}`` (others are refused when they do).
    reservations: bool = False
    #: Who ships the class (for messages): ``neuro-san`` or ``neuro-san-studio``.
    origin: str = "neuro-san"


_REGISTRY: dict[str, MiddlewareClass] = {}


def register(middleware_class: MiddlewareClass) -> None:
    """Accept ``middleware_class``'s names in network files; a name taken is refused."""
    taken = [name for name in middleware_class.names if name in _REGISTRY]
    if taken:
        raise ValueError(f"middleware class {taken[0]!r} is registered already")
    _REGISTRY.update(dict.fromkeys(middleware_class.names, middleware_class))


def unregister(middleware_class: MiddlewareClass) -> None:
    """Stop accepting ``middleware_class``'s names (networks loaded already keep theirs)."""
    for name in middleware_class.names:
        if _REGISTRY.get(name) is middleware_class:
            del _REGISTRY[name]


def lookup(name: str) -> MiddlewareClass | None:
    """The class a network file's ``class`` value names, or None."""
    return _REGISTRY.get(name)


def class_names() -> tuple[str, ...]:
    """Every accepted ``class`` path, sorted (for messages)."""
    return tuple(sorted(_REGISTRY))


def classes() -> tuple[MiddlewareClass, ...]:
    """Every registered class once, neuro-san's own first, then in registration order."""
    distinct = list(dict.fromkeys(_REGISTRY.values()))
    return tuple(sorted(distinct, key=lambda c: c.origin != "neuro-san"))
