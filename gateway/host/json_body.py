"""The one way a request body becomes JSON on the HTTP port, for every front-end.

REST (gateway/transcoder), ``/mcp`` and A2A (both bindings) decode bodies with
:func:`decode_json`; where an SDK parses the body itself (the a2a-sdk's dispatchers), the
front-end decodes it here first and hands the SDK only a body that passed. So every
front-end refuses the same hostile bodies, each as its protocol's client error (400, or
JSON-RPC's -32700 parse error), never as a 500:

- bytes that are not UTF-8, and UTF-16/32 (RFC 8259 §8.1: JSON exchanged between systems
  is UTF-8; ``json.loads`` on bytes would guess the encoding, the SDKs do not);
- nesting deeper than :data:`MAX_DEPTH`, found *before* any parser recurses (the C
  parser stops at the recursion limit, ~1000, but the code after it, ours, protobuf's
  ``ParseDict`` (limit 100) and the SDKs', recursed into a RecursionError from ~990);
- integers longer than :data:`MAX_INTEGER_DIGITS` digits (Python refuses over 4,300 with a
  ValueError; a Struct number is a double, and an integer over ~308 digits overflows it);
- numbers that are not finite (``NaN``, ``Infinity``, ``1e999``): protobuf cannot carry
  them in a Struct, and JSON has no such numbers.

A leading UTF-8 byte order mark is skipped, as ``json.loads`` on bytes does.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: The deepest nesting of arrays and objects a body may have. Requests nest ~5 levels of
#: envelope around user data (sly_data, metadata): 64 leaves user data ~60 levels, under
#: protobuf's own ParseDict limit (100).
MAX_DEPTH = 64
#: The longest integer a body may hold, in digits (a sign aside): a double's range ends
#: at ~1.8e308, and no protobuf integer field holds more than 20 digits.
MAX_INTEGER_DIGITS = 100

# A JSON string, escapes included (the "unrolled loop" form: no backtracking per char).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_OPENERS_AS_ONE = str.maketrans("{}", "[]")
_UTF8_BOM = "\ufeff"


class MalformedJson(ValueError):
    """A body that is not acceptable JSON; ``str()`` is the reason, phrased for the client."""


def decode_json(raw: bytes) -> Any:
    """The JSON value of ``raw``, or :class:`MalformedJson` saying what is wrong with it."""
    text = decode_text(raw)
    check_depth(text)
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant)
    except MalformedJson:
        raise
    except json.JSONDecodeError as error:
        raise MalformedJson(f"the body is not valid JSON: {error}") from None
    except RecursionError:  # unreachable after check_depth; kept as the last word
        raise MalformedJson(f"the body nests arrays and objects deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # anything else the parser refuses is still the body's fault
        raise MalformedJson(f"the body is not valid JSON: {error}") from None


def decode_text(raw: bytes) -> str:
    """``raw`` as UTF-8 text (a leading byte order mark dropped), else :class:`MalformedJson`."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(raw) >= 2 and (raw[0] == 0 or raw[1] == 0)):
        raise MalformedJson("the body is UTF-16 or UTF-32; send JSON as UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedJson(f"the body is not UTF-8 (invalid byte at offset {error.start})") from None
    return text[1:] if text.startswith(_UTF8_BOM) else text


def check_depth(text: str) -> None:
    """Refuse ``text`` when its arrays and objects nest deeper than :data:`MAX_DEPTH`.

    Strings are blanked out (their brackets are text), every other character but the
    brackets dropped, then innermost pairs removed one level per pass: a pair still there
    after :data:`MAX_DEPTH` passes sits deeper. No recursion, a few C-speed passes over the
    brackets only; unbalanced brackets are left for the parser to report."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).translate(_OPENERS_AS_ONE)
    for _ in range(MAX_DEPTH):
        if "[]" not in brackets:
            return
        brackets = brackets.replace("[]", "")
    if "[]" in brackets:
        raise MalformedJson(f"the body nests arrays and objects deeper than {MAX_DEPTH} levels")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise MalformedJson(f"the body has an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(digits)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise MalformedJson(f"the body has a number out of range ({text[:20]}…)")
    return value


def _no_constant(name: str) -> float:
    raise MalformedJson(f"the body has {name}, which is not a JSON number")
