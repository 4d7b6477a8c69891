"""The settings registry's types: a declared :class:`Setting`, its parsing, and the
process's :class:`Settings` snapshot.

Every setting the server, the gateway or the client commands honour is declared once (in the
``catalog_*`` modules) with its kind, default, flag, one-line doc and whether it is a secret.
The command line reads the environment once at start into a :class:`Settings` (see
:func:`activate`); everything else asks :func:`current` for it, so no module below the CLI
reads ``os.environ`` for a setting. A :class:`Settings` is also a ``Mapping[str, str]`` of the
raw values, so the ``from_env(env)`` readers that tests call with a plain dict keep working.

Switches and numbers use :mod:`neuro_san.core.env_settings`' grammar (the only one), so a
malformed value fails the same way wherever it is read: ``ValueError`` naming the variable
and what it accepts.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from neuro_san.core.env_settings import env_flag, env_number


class Kind(Enum):
    """How a setting's text is read (and what :func:`parse` accepts)."""

    TEXT = "text"
    SWITCH = "switch"
    INT = "int"
    FLOAT = "float"
    CHOICE = "choice"
    JSON = "json"


class Origin(Enum):
    """Whose name a setting is: ours, neuro-san's, neuro-san-studio's, or a provider's or
    standard's (``OPENAI_API_KEY``, ``OTEL_*``) that we honour as they define it."""

    OURS = "ours"
    NEURO_SAN = "neuro-san"
    STUDIO = "studio"
    PROVIDER = "provider"
    STANDARD = "standard"


class SettingError(ValueError):
    """A malformed value: its message is the one line the CLI prints before exiting 2."""


@dataclass(frozen=True)
class Setting:
    """One setting. ``default`` is the typed value when unset (None: unset means off/none);
    ``shown_default`` what ``neuro-san config`` and the README say when that is not just
    ``default`` (a computed default). ``applies``: the commands it changes (serve, gateway,
    client). ``internal``: set by the server for its own children, never by a user."""

    name: str
    kind: Kind
    default: Any
    doc: str
    flag: str | None = None
    secret: bool = False
    applies: tuple[str, ...] = ("serve",)
    origin: Origin = Origin.OURS
    choices: tuple[str, ...] = ()
    shown_default: str | None = None
    internal: bool = False
    #: Extra validation of the parsed value: raises ValueError with the whole message.
    check: Callable[[str, Any], None] | None = None

    def accepts(self) -> str:
        """What the setting accepts, for messages and ``neuro-san config``."""
        if self.kind is Kind.SWITCH:
            extra = "".join(f", {word}" for word in self.choices)
            return f"true or false (also 1/0, yes/no, on/off{extra})"
        if self.kind is Kind.INT:
            return "a whole number >= 0"
        if self.kind is Kind.FLOAT:
            return "a number >= 0"
        if self.kind is Kind.CHOICE:
            return "one of " + ", ".join(self.choices)
        if self.kind is Kind.JSON:
            return "a JSON object"
        return "text"


def parse(setting: Setting, env: Mapping[str, str]) -> Any:
    """``setting``'s typed value in ``env`` (its default when unset or blank); SettingError
    naming the variable and what it accepts when malformed."""
    raw = env.get(setting.name, "")
    if not raw.strip():
        return setting.default
    try:
        value = _parse(setting, raw)
        if setting.check is not None:
            setting.check(setting.name, value)
    except SettingError:
        raise
    except ValueError as error:
        raise SettingError(str(error)) from None
    return value


def _parse(setting: Setting, raw: str) -> Any:
    name = setting.name
    if setting.kind is Kind.SWITCH:
        if raw.strip().lower() in setting.choices:  # a switch's extra words for on (AGENT_TRACING=otel)
            return True
        return env_flag({name: raw}, name, bool(setting.default))
    if setting.kind in (Kind.INT, Kind.FLOAT):
        # env_number's messages ("is not a number", "must not be negative"): the one grammar.
        return env_number({name: raw}, name, int if setting.kind is Kind.INT else float)
    if setting.kind is Kind.CHOICE:
        text = raw.strip().lower()
        if text not in setting.choices:
            raise SettingError(f"{name} must be {setting.accepts()}, not {raw.strip()!r}")
        return text
    if setting.kind is Kind.JSON:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as error:
            raise SettingError(f"{name} is not valid JSON ({error.msg} at character {error.pos})") from None
        if not isinstance(value, dict):
            raise SettingError(f"{name} must be {setting.accepts()}, not {type(value).__name__}")
        return value
    return raw.strip()


_CATALOG: dict[str, Setting] = {}


def declare(*settings: Setting) -> None:
    """Add settings to the registry (the catalog modules, at import). A name twice is a bug."""
    for setting in settings:
        if setting.name in _CATALOG:
            raise RuntimeError(f"setting {setting.name} declared twice")
        _CATALOG[setting.name] = setting


def catalog() -> Mapping[str, Setting]:
    """Every declared setting by name (the catalogs are loaded by the package's ``__init__``)."""
    return _CATALOG


def setting(name: str) -> Setting:
    """The declared setting; KeyError names it (a read of an undeclared name is a bug)."""
    try:
        return _CATALOG[name]
    except KeyError:
        raise KeyError(f"{name} is not a declared setting (neuro_san/settings/catalog_*.py)") from None


class Settings(Mapping[str, str]):
    """The process's settings: the environment as read at start (a copy, or a live view of
    ``os.environ`` for library use), typed through the registry; ``flags`` records the
    settings a command-line flag gave, for :func:`source`."""

    def __init__(self, environ: Mapping[str, str], flags: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self.flags: dict[str, str] = dict(flags or {})

    def __getitem__(self, name: str) -> str:
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)

    def value(self, name: str) -> Any:
        """The typed value of a declared setting (SettingError when malformed)."""
        return parse(setting(name), self)

    def source(self, name: str) -> str:
        """Where the effective value comes from: flag, environment or default."""
        if name in self.flags:
            return "flag"
        return "environment" if self._environ.get(name, "").strip() else "default"

    def problems(self, applies: str | None = None) -> list[str]:
        """One line per malformed value of a setting that ``applies`` to that command (all: None)."""
        lines = []
        for declared in _CATALOG.values():
            if applies is not None and applies not in declared.applies:
                continue
            try:
                parse(declared, self)
            except SettingError as error:
                lines.append(str(error))
        return lines

    def unknown(self) -> list[tuple[str, str | None]]:
        """``AGENT_*`` variables no setting declares, each with the closest declared name (the
        names compared without their common ``AGENT_`` prefix, which would make any two alike)."""
        known = {name.removeprefix("AGENT_"): name for name in _CATALOG if name.startswith("AGENT_")}
        found = []
        for name in sorted(self._environ):
            if name.startswith("AGENT_") and name not in _CATALOG:
                close = difflib.get_close_matches(name.removeprefix("AGENT_"), list(known), n=1, cutoff=0.6)
                found.append((name, known[close[0]] if close else None))
        return found


_active: Settings | None = None


def current() -> Settings:
    """The process's settings: the CLI's snapshot while a command runs, else a live view of
    the environment (library use, tests that set variables with monkeypatch)."""
    return _active if _active is not None else Settings(os.environ)


def process_env() -> Mapping[str, str]:
    """The raw environment as the settings see it (for readers that take ``env: Mapping``)."""
    return current()


@contextlib.contextmanager
def activate(settings: Settings) -> Iterator[Settings]:
    """Make ``settings`` the process's while the block runs (the CLI, around a command), and
    restore the previous ones after, so a command run inside a test leaks nothing."""
    global _active
    previous, _active = _active, settings
    try:
        yield settings
    finally:
        _active = previous


def snapshot() -> Settings:
    """The environment read once, now: the only read of ``os.environ`` for settings."""
    return Settings(dict(os.environ))


def hand_down(name: str, value: str) -> None:
    """Give a library that reads its own variable (the a2a-sdk reads
    ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED`` when it is imported) ``value``, unless the
    operator set one: written to the process environment, where that library looks (and
    worker processes inherit it). ``name`` must be declared, so ``neuro-san config`` lists it."""
    setting(name)
    os.environ.setdefault(name, value)
