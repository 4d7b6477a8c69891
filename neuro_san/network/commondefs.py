"""``commondefs``: the text macros of a network file.

Two kinds, as upstream:

* ``replacement_strings``: every ``{key}`` inside any string value is replaced by the
  key's text. Replacements may themselves contain ``{other_key}``, so passes repeat until
  nothing changes. Unknown ``{...}`` (JSON examples in a prompt, for instance) are left
  alone.
* ``replacement_values``: a string value exactly equal to a key (written as the bare key,
  ``function = "aaosa_call"``) is replaced by the key's whole value, which may be a dict
  or a list.

Values are replaced first, so that the strings they bring in get their ``{key}``
replacements too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name

#: Stop a self-growing definition (``a = "x{a}"``) instead of looping forever.
MAX_PASSES = 20

_PLACEHOLDER = re.compile(r"\{([^{}\s]+)\}")


def apply_commondefs(document: dict[str, Any], file: str) -> dict[str, Any]:
    """Return a copy of ``document`` with its ``commondefs`` applied everywhere but in
    ``commondefs`` itself (which is kept as written)."""
    commondefs = document.get("commondefs")
    if commondefs is None:
        return document
    if not isinstance(commondefs, Mapping):
        raise NetworkLoadError(file, "commondefs", "must be a dict")
    strings = _replacement_strings(commondefs.get("replacement_strings"), file)
    values = commondefs.get("replacement_values") or {}
    if not isinstance(values, Mapping):
        raise NetworkLoadError(file, "commondefs.replacement_values", "must be a dict")

    result: dict[str, Any] = {}
    for key, value in document.items():
        if key == "commondefs":
            result[key] = value
            continue
        if values:
            value = _replace_values(value, values)
        if strings:
            value = _replace_strings_until_stable(value, strings, file)
        result[key] = value
    return result


def _replacement_strings(raw: Any, file: str) -> dict[str, str]:
    if raw is None:
        return {}
    key_path = "commondefs.replacement_strings"
    if not isinstance(raw, Mapping):
        raise NetworkLoadError(file, key_path, "must be a dict")
    strings: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            strings[key] = value
        elif isinstance(value, bool | int | float):
            strings[key] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            raise NetworkLoadError(
                file, f"{key_path}.{key}", f"must be a string, not {type_name(value)}"
            )
    return strings


def _replace_values(value: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        # A deep copy: two agents sharing a replacement must not share a mutable dict.
        return copy.deepcopy(values[value]) if value in values else value
    if isinstance(value, dict):
        return {key: _replace_values(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_values(item, values) for item in value]
    return value


def _replace_strings_until_stable(value: Any, strings: Mapping[str, str], file: str) -> Any:
    for _ in range(MAX_PASSES):
        replaced = _replace_strings(value, strings)
        if replaced == value:
            return replaced
        value = replaced
    raise NetworkLoadError(
        file,
        "commondefs.replacement_strings",
        f"replacements still change after {MAX_PASSES} passes (a definition refers to itself?)",
    )


def _replace_strings(value: Any, strings: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        if "{" not in value:
            return value
        return _PLACEHOLDER.sub(lambda match: strings.get(match.group(1), match.group(0)), value)
    if isinstance(value, dict):
        return {key: _replace_strings(item, strings) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_strings(item, strings) for item in value]
    return value
