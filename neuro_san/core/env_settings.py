"""Numbers and switches from environment variables, refused at start-up when malformed.

Every settings reader that takes ``NAME=<number>`` or ``NAME=<on/off>`` uses these helpers,
so that a bad value always fails the same way (``ValueError`` naming the variable and the
value) and the CLI can turn it into one clear line and exit code 2. One grammar for
switches: ``true/false``, ``1/0``, ``yes/no``, ``on/off`` (any case); anything else is
refused, since a misspelt "off" must not leave something served.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})


def env_flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """``env[name]`` as a switch; ``default`` when unset or blank."""
    raw = env.get(name, "")
    text = raw.strip().lower()
    if not text:
        return default
    if text in _ON:
        return True
    if text in _OFF:
        return False
    raise ValueError(f"{name}={raw!r} is not a switch: use true or false (also 1/0, yes/no, on/off)")


def env_number(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> int | float | None:
    """``env[name]`` as a non-negative ``kind``; None when unset or blank."""
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None
    if value < 0:
        raise ValueError(f"{name}={text!r} must not be negative")
    return value


def env_numbers(
    env: Mapping[str, str], settings: Iterable[tuple[str, str, type[int] | type[float]]]
) -> dict[str, Any]:
    """{field: value} for each ``(variable, field, kind)`` that is set."""
    values: dict[str, Any] = {}
    for name, field_name, kind in settings:
        value = env_number(env, name, kind)
        if value is not None:
            values[field_name] = value
    return values
