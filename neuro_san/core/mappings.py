"""Merging configuration documents: one rule for every layer that lays one over another.

The LLM info file over the built-in table, a network's top-level ``sly_data_schema``
under the front man's own, a toolbox file over the default toolbox: in each, a key
whose value is an object on both sides is merged key by key, and anything else is
replaced by the overlay's value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` laid over ``base``, recursively where both hold an object.

    Neither argument is changed; the result shares the values it did not merge with
    them, so a caller that will change the result copies it first.
    """
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
