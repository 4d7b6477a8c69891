"""Tool arguments as neuro-san 0.7 hands them on: typed as declared, and as sentences.

The model's arguments are converted to the types the tool's parameters declare before
any tool sees them (``3`` for a ``float`` parameter arrives as ``3.0``; ``3.0`` for an
``int`` one as ``3``), as LangChain's argument schema does upstream. The "Invoking"
message keeps the model's own values; "Received arguments:" and the tool get these.

A called LLM agent receives the arguments as one sentence per argument, one per line,
then its ``command``: values of parameters declared ``string`` are quoted (``The topic
is 'cats'.``), others are not (``The amount is 2.0.``; so are strings of undeclared
parameters), lists read ``The xs are 1, 2.`` and objects as their JSON without the outer
braces. A ``/name`` network receives them as a JSON block instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)


def convert_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` with numbers converted to the JSON Schema types ``schema`` declares."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(arguments)
    converted = {}
    for name, value in arguments.items():
        declared = properties.get(name)
        converted[name] = _convert(value, declared) if isinstance(declared, Mapping) else value
    return converted


def _convert(value: Any, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(value, bool):
        return value
    if kind == "number" and isinstance(value, int):
        return float(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "array" and isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_convert(item, schema["items"]) for item in value]
    if kind == "object" and isinstance(value, Mapping):
        return convert_arguments(value, schema)
    return value


def agent_input_text(arguments: Mapping[str, Any], parameters: Mapping[str, Any] | None, command: str) -> str:
    """The HUMAN text a called LLM agent gets (see the module docstring).

    ``parameters`` are the callee's declared ones (its ``function.parameters``); when it
    declares properties, arguments it does not declare are left out, as upstream does."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    sentences = []
    for name, value in arguments.items():
        if value is None:
            continue
        declared_type = None
        if isinstance(properties, Mapping) and properties:
            declared = properties.get(name)
            if not isinstance(declared, Mapping):
                continue
            declared_type = declared.get("type")
        verb = "are" if declared_type == "array" or isinstance(value, list) else "is"
        sentences.append(f"The {name} {verb} {_value_text(value, declared_type)}.")
    return "\n".join(part for part in ("\n".join(sentences), command) if part)


def _value_text(value: Any, declared_type: Any = None) -> str:
    if declared_type == "dict" or isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)[1:-1]
    if declared_type == "array" or isinstance(value, list):
        items = value if isinstance(value, list) else [value]
        return ", ".join(_value_text(item) for item in items)
    if declared_type in ("string", "str"):
        return f"'{value}'"
    return str(value)


def network_input_text(arguments: Mapping[str, Any]) -> str:
    """What a ``/name`` network called as a tool receives: the arguments as a JSON block."""
    return f"```json\n{json.dumps(dict(arguments))}```"


def a2a_input_text(arguments: Mapping[str, Any]) -> str:
    """What an A2A agent called as a tool receives: the free-text inquiry itself (A2A agents
    are asked in plain language; neuro-san has no A2A tools to copy), else the JSON block."""
    inquiry = arguments.get("inquiry")
    if len(arguments) == 1 and isinstance(inquiry, str):
        return inquiry
    return network_input_text(arguments)


_warned_inquiry: set[str] = set()


def synthesized_inquiry_schema(ref: str) -> dict[str, Any]:
    """The parameters offered for an external network whose front man declares none: one
    required ``inquiry`` string, as neuro-san synthesizes. The operator is warned once per
    process and network in the log (upstream also puts the warning in the user's stream)."""
    if ref not in _warned_inquiry:
        _warned_inquiry.add(ref)
        log.warning(
            "the front man of external agent %s declares no parameters; it is offered to the LLM "
            "with a single required 'inquiry' string parameter",
            ref,
        )
    return {
        "type": "object",
        "properties": {"inquiry": {"type": "string", "description": "The request to send to this agent network."}},
        "required": ["inquiry"],
    }
