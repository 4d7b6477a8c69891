"""Pure helpers of the provider adapters: reading 4xx messages for their meaning (worded as the
providers word them), and Gemini's schema subset."""

from __future__ import annotations

import pytest

from neuro_san.llm.errors import context_limit, is_context_length_error, is_unsupported_error


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
            128000,
        ),
        ("prompt is too long: 208310 tokens > 200000 maximum", 200000),
        ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", 1048576),
        ("Input is too long for requested model.", None),
        ("This model's maximum context length is 65,536 tokens.", 65536),
    ],
)
def test_context_length_messages(message: str, limit: int | None) -> None:
    assert is_context_length_error(message)
    assert context_limit(message) == limit


@pytest.mark.parametrize(
    "message",
    [
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "The model `gpt-9` does not exist or you do not have access to it.",
        "Unsupported value: 'messages[0].role' does not support 'system' with this model.",
        "The provided model identifier is invalid.",
        "API key not valid. Please pass a valid API key.",
    ],
)
def test_unsupported_configuration_messages(message: str) -> None:
    assert is_unsupported_error(message) and not is_context_length_error(message)


def test_other_bad_requests_are_neither() -> None:
    message = "Invalid type for 'messages[1].content': expected one of a string or array of objects."
    assert not is_unsupported_error(message) and not is_context_length_error(message)


def test_gemini_schemas_drop_what_openapi_lacks() -> None:
    from neuro_san.llm.adapters.gemini import gemini_schema

    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "x": {"type": ["string", "null"], "description": "x"},
            "y": {"type": "array", "items": {"$ref": "#/a"}},
        },
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "x": {"type": "string", "nullable": True, "description": "x"},
            "y": {"type": "array", "items": {}},
        },
    }
