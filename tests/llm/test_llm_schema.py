"""Tool parameter schema normalisation."""

from __future__ import annotations

import copy
from typing import Any

from neuro_san.llm.schema import tool_parameters_schema


def test_none_and_empty_give_an_empty_object() -> None:
    assert tool_parameters_schema(None) == {"type": "object", "properties": {}}
    assert tool_parameters_schema({}) == {"type": "object", "properties": {}}


def test_legacy_types_are_translated_recursively() -> None:
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "amount": {"type": "float", "description": "how much"},
            "count": {"type": "int"},
            "flag": {"type": "bool"},
            "name": {"type": "str"},
            "options": {"type": "dict", "properties": {"depth": {"type": "int"}}},
            "tags": {"type": "list", "items": {"type": "str"}},
            "maybe": {"type": ["str", "None"]},
        },
        "required": ["amount"],
    }
    original = copy.deepcopy(parameters)
    schema = tool_parameters_schema(parameters)
    props = schema["properties"]
    assert props["amount"] == {"type": "number", "description": "how much"}
    assert props["count"] == {"type": "integer"}
    assert props["flag"] == {"type": "boolean"}
    assert props["name"] == {"type": "string"}
    assert props["options"] == {"type": "object", "properties": {"depth": {"type": "integer"}}}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["maybe"] == {"type": ["string", "null"]}
    assert schema["required"] == ["amount"]
    assert parameters == original  # pure: the input is untouched
    assert schema["properties"]["options"] is not parameters["properties"]["options"]


def test_mismatched_defaults_are_dropped_and_matching_kept() -> None:
    schema = tool_parameters_schema(
        {
            "properties": {
                "a": {"type": "int", "default": "five"},
                "b": {"type": "int", "default": 5},
                "c": {"type": "float", "default": 1},
                "d": {"type": "int", "default": True},
                "e": {"default": "anything"},
                "f": {"type": "array", "items": {"type": "bool", "default": "yes"}},
            }
        }
    )
    props = schema["properties"]
    assert "default" not in props["a"]
    assert props["b"]["default"] == 5
    assert props["c"]["default"] == 1
    assert "default" not in props["d"]  # bool is not an integer in JSON Schema
    assert props["e"]["default"] == "anything"
    assert "default" not in props["f"]["items"]


def test_top_level_is_forced_to_object_and_required_filtered() -> None:
    schema = tool_parameters_schema(
        {
            "type": "dict",
            "properties": {"x": {"type": "string"}},
            "required": ["x", "ghost", "x"],
            "description": "kept",
        }
    )
    assert schema == {
        "type": "object",
        "properties": {"x": {"type": "string"}},
        "required": ["x"],
        "description": "kept",
    }
    no_properties = tool_parameters_schema({"required": ["ghost"]})
    assert no_properties == {"type": "object", "properties": {}}


def test_unknown_type_names_are_dropped_and_combinators_handled() -> None:
    schema = tool_parameters_schema(
        {
            "properties": {
                "weird": {"type": "tensor"},
                "either": {"anyOf": [{"type": "int"}, {"type": "str"}]},
                "mapping": {"type": "dict", "additionalProperties": {"type": "float"}},
            }
        }
    )
    props = schema["properties"]
    assert props["weird"] == {}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["mapping"]["additionalProperties"] == {"type": "number"}
