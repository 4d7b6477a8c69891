"""Numbers from environment variables, refused at start-up when they are not numbers.

Every settings reader that takes ``NAME=<number>`` uses this one helper, so that a bad
value always fails the same way (``ValueError`` naming the variable and the value) and
the CLI can turn it into one clear line and exit code 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


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
