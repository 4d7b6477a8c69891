"""Load-time check of a function's ``parameters`` (the JSON Schema an LLM sees).

The runtime sends ``neuro_san.llm.schema.tool_parameters_schema`` of it to the provider:
legacy type names (``float``, ``dict``…) are mapped there, but a type name it does not
know (``"objekt"``) would be dropped silently and a schema that is still not JSON Schema
is answered by the provider with HTTP 400 at chat time. Both are refused at load, each
fault with its key path.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.llm.schema import TYPE_ALIASES, tool_parameters_schema

#: Type names that mean "no type" and that the normaliser's dropping serves as meant
#: (LangChain-era files write ``any``); not faults.
_UNTYPED = frozenset({"any"})
#: The keys whose values are sub-schemas, as ``tool_parameters_schema`` walks them.
_ONE = ("items", "additionalProperties")
_MANY = ("anyOf", "oneOf", "allOf")


def parameters_faults(parameters: Any, file: str, key_path: str) -> list[NetworkLoadError]:
    """The faults of one ``function.parameters`` value (already known to be a dict or None)."""
    if not isinstance(parameters, Mapping) or not parameters:
        return []
    faults = [NetworkLoadError(file, path, reason) for path, reason in _unknown_types(parameters, key_path)]
    if faults:
        return faults
    try:
        Draft202012Validator.check_schema(tool_parameters_schema(parameters))
    except SchemaError as error:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
        return [NetworkLoadError(file, key_path + where, f"not a valid JSON Schema: {error.message}")]
    return []


def _unknown_types(node: Mapping[str, Any], key_path: str) -> Iterator[tuple[str, str]]:
    value = node.get("type")
    for name in [value] if isinstance(value, str) else value if isinstance(value, list) else ():
        if isinstance(name, str) and name.strip().lower() not in TYPE_ALIASES.keys() | _UNTYPED:
            close = difflib.get_close_matches(name.strip().lower(), sorted(set(TYPE_ALIASES.values())), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            yield f"{key_path}.type", f"unknown JSON Schema type {name!r}{hint}"
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if isinstance(sub, Mapping):
                yield from _unknown_types(sub, f"{key_path}.properties.{name}")
    for key in _ONE:
        if isinstance(node.get(key), Mapping):
            yield from _unknown_types(node[key], f"{key_path}.{key}")
    for key in _MANY:
        subs = node.get(key)
        if isinstance(subs, list):
            for index, sub in enumerate(subs):
                if isinstance(sub, Mapping):
                    yield from _unknown_types(sub, f"{key_path}.{key}[{index}]")
