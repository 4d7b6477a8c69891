"""The HTTP port's one body decoder (gateway/host/json_body.py), without a server: what it
refuses and what it lets through exactly at its limits."""

from __future__ import annotations

import json

import pytest

from gateway.host.json_body import MAX_DEPTH, MAX_INTEGER_DIGITS, MalformedJson, decode_json


def _nested(depth: int) -> str:
    """``depth`` levels, arrays and objects alternating, a string at the bottom."""
    text = '"leaf"'
    for level in range(depth):
        text = f"[{text}]" if level % 2 else '{"k": ' + text + "}"
    return text


def test_nesting_up_to_the_limit_passes_one_more_is_refused() -> None:
    assert decode_json(_nested(MAX_DEPTH).encode()) == json.loads(_nested(MAX_DEPTH))
    with pytest.raises(MalformedJson, match=f"deeper than {MAX_DEPTH}"):
        decode_json(_nested(MAX_DEPTH + 1).encode())


@pytest.mark.parametrize("depth", [990, 100_000])
def test_deep_nesting_is_refused_without_recursion_error(depth: int) -> None:
    with pytest.raises(MalformedJson, match="deeper than"):
        decode_json(("[" * depth + "]" * depth).encode())


def test_brackets_inside_strings_are_text() -> None:
    body = json.dumps({"text": "[" * 500 + '\\"{' * 300, "n": [1, [2, [3]]]})
    assert decode_json(body.encode()) == json.loads(body)


def test_integers_up_to_the_limit_pass_longer_ones_are_refused() -> None:
    longest = "9" * MAX_INTEGER_DIGITS
    assert decode_json(f"[{longest}, -{longest}]".encode()) == [int(longest), -int(longest)]
    with pytest.raises(MalformedJson, match=f"more than {MAX_INTEGER_DIGITS} digits"):
        decode_json(f'{{"n": 1{longest}}}'.encode())
    with pytest.raises(MalformedJson, match="digits"):
        decode_json(("1" * 5000).encode())


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_numbers_that_are_not_finite_are_refused(number: str) -> None:
    with pytest.raises(MalformedJson):
        decode_json(f'{{"x": {number}}}'.encode())


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_utf16_and_utf32_are_refused(encoding: str) -> None:
    with pytest.raises(MalformedJson, match="UTF-16 or UTF-32"):
        decode_json('{"text": "hi"}'.encode(encoding))


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(MalformedJson, match="not UTF-8"):
        decode_json(b'{"text": "h\xff\xfei"}')


def test_a_utf8_byte_order_mark_is_skipped_and_text_kept() -> None:
    assert decode_json('\ufeff{"text": "héllo ✓", "f": 1.5}'.encode()) == {"text": "héllo ✓", "f": 1.5}


@pytest.mark.parametrize("body", [b"", b"   ", b'{"a": ', b"{'a': 1}", b'{"a": 1} x'])
def test_text_that_is_not_json_is_refused(body: bytes) -> None:
    with pytest.raises(MalformedJson, match="not valid JSON"):
        decode_json(body)
