"""Turn a neuro-san ``function.parameters`` block into JSON Schema a provider accepts.

Agent networks written for neuro-san often use Python-ish type names (``float``,
``int``, ``bool``, ``dict``…) that LangChain tolerated but OpenAI and Anthropic reject,
give defaults that do not match their own type, or list ``required`` properties that do
not exist. Providers answer such schemas with HTTP 400, so the runtime normalises every
tool's parameters once, here, before any model sees them.

:func:`tool_parameters_schema` is pure: it never mutates its input and returns a fresh
dict, so callers may cache the result per tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Legacy and alias type names → JSON Schema type names.
TYPE_ALIASES: Mapping[str, str] = {
    "float": "number",
    "double": "number",
    "number": "number",
    "int": "integer",
    "integer": "integer",
    "bool": "boolean",
    "boolean": "boolean",
    "str": "string",
    "string": "string",
    "dict": "object",
    "object": "object",
    "list": "array",
    "array": "array",
    "null": "null",
    "none": "null",
}

_PYTHON_CHECKS: Mapping[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "string": (str,),
    "object": (dict,),
    "array": (list, tuple),
    "null": (type(None),),
}


def tool_parameters_schema(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """A valid JSON Schema object for a tool's ``parameters``.

    - Type names are normalised recursively (``float`` → ``number``, ``int`` →
      ``integer``, ``bool`` → ``boolean``, ``str`` → ``string``, ``dict`` → ``object``,
      ``list`` → ``array``), in ``properties``, ``items``, ``additionalProperties`` and
      ``anyOf``/``oneOf``/``allOf`` alike; unknown type names are dropped.
    - A ``default`` that does not match its property's type is dropped.
    - The top level is always ``{"type": "object", "properties": {...}}``; ``required``
      keeps only names that are properties (and is omitted when empty).
    - ``None`` (a tool without parameters) gives ``{"type": "object", "properties": {}}``.
    """
    if not parameters:
        return {"type": "object", "properties": {}}
    schema = _normalise(parameters)
    schema["type"] = "object"
    properties = schema.get("properties")
    schema["properties"] = properties if isinstance(properties, dict) else {}
    required = schema.pop("required", None)
    if isinstance(required, list | tuple):
        kept = [name for name in dict.fromkeys(required) if name in schema["properties"]]
        if kept:
            schema["required"] = kept
    return schema


def _normalise(node: Mapping[str, Any]) -> dict[str, Any]:
    """A normalised copy of one schema node."""
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            normalised_type = _normalise_type(value)
            if normalised_type is not None:
                result["type"] = normalised_type
        elif key == "properties" and isinstance(value, Mapping):
            result["properties"] = {
                str(name): _normalise(sub) if isinstance(sub, Mapping) else {} for name, sub in value.items()
            }
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            result[key] = _normalise(value)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list | tuple):
            result[key] = [_normalise(sub) for sub in value if isinstance(sub, Mapping)]
        else:
            result[key] = _copy(value)
    if "default" in result and not _matches(result["default"], result.get("type")):
        del result["default"]
    return result


def _normalise_type(value: Any) -> str | list[str] | None:
    if isinstance(value, str):
        return TYPE_ALIASES.get(value.strip().lower())
    if isinstance(value, list | tuple):
        names = [TYPE_ALIASES.get(v.strip().lower()) for v in value if isinstance(v, str)]
        known = [name for name in dict.fromkeys(names) if name is not None]
        return known or None
    return None


def _matches(value: Any, schema_type: str | list[str] | None) -> bool:
    """Whether ``value`` is an instance of ``schema_type`` (no type: anything goes)."""
    if schema_type is None:
        return True
    types = [schema_type] if isinstance(schema_type, str) else schema_type
    for name in types:
        # bool is an int in Python but not a number in JSON Schema.
        if name in ("number", "integer") and isinstance(value, bool):
            continue
        if isinstance(value, _PYTHON_CHECKS.get(name, ())):
            return True
    return False


def _copy(value: Any) -> Any:
    """A deep copy of plain JSON-like data, so results never alias the input."""
    if isinstance(value, Mapping):
        return {str(k): _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value
