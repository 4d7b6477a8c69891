"""The one way a request body becomes JSON on the HTTP port, for every front-end.

REST (gateway/transcoder), ``/mcp`` and A2A (both bindings) decode bodies with
:func:`decode_json`; where an SDK parses the body itself (the a2a-sdk's dispatchers), the
front-end decodes it here first and hands the SDK only a body that passed. So every
front-end refuses the same hostile bodies, each as its protocol's client error (400, or
JSON-RPC's -32700 parse error), never as a 500:

- bytes that are not UTF-8, and UTF-16/32 (RFC 8259 §8.1: JSON exchanged between systems
  is UTF-8; ``json.loads`` on bytes would guess the encoding, the SDKs do not);
- nesting deeper than :data:`MAX_DEPTH`, found right after the C parser (which itself
  stops cleanly, with a RecursionError, at the interpreter's recursion limit, ~1000) and
  before any Python code recurses into the value: ours, protobuf's ``ParseDict`` (limit
  100 messages) and the SDKs' had recursed into a RecursionError from ~990 levels;
- integers longer than :data:`MAX_INTEGER_DIGITS` digits (Python refuses over 4,300 with a
  ValueError; a Struct number is a double, and an integer over ~308 digits overflows it);
- numbers that are not finite (``NaN``, ``Infinity``, ``1e999``): protobuf cannot carry
  them in a Struct, and JSON has no such numbers.

A leading UTF-8 byte order mark is skipped, as ``json.loads`` on bytes does.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: The deepest nesting of arrays and objects a body may have. Requests nest ~5 levels of
#: envelope around user data (sly_data, metadata): 64 leaves user data ~60 levels, under
#: protobuf's own ParseDict limit (100).
MAX_DEPTH = 64
#: The longest integer a body may hold, in digits (a sign aside): a double's range ends
#: at ~1.8e308, and no protobuf integer field holds more than 20 digits.
MAX_INTEGER_DIGITS = 100

_TOO_DEEP = f"the body nests arrays and objects deeper than {MAX_DEPTH} levels"
_UTF8_BOM = "\ufeff"


class MalformedJson(ValueError):
    """A body that is not acceptable JSON; ``str()`` is the reason, phrased for the client."""


def decode_json(raw: bytes) -> Any:
    """The JSON value of ``raw``, or :class:`MalformedJson` saying what is wrong with it."""
    text = decode_text(raw)
    try:
        value = _DECODER.decode(text)
    except MalformedJson:
        raise
    except json.JSONDecodeError as error:
        raise MalformedJson(f"the body is not valid JSON: {error}") from None
    except RecursionError:  # the C parser's own guard, at the interpreter's recursion limit
        raise MalformedJson(_TOO_DEEP) from None
    except ValueError as error:  # anything else the parser refuses is still the body's fault
        raise MalformedJson(f"the body is not valid JSON: {error}") from None
    if too_deep(value):
        raise MalformedJson(_TOO_DEEP)
    return value


def decode_text(raw: bytes) -> str:
    """``raw`` as UTF-8 text (a leading byte order mark dropped), else :class:`MalformedJson`."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(raw) >= 2 and (raw[0] == 0 or raw[1] == 0)):
        raise MalformedJson("the body is UTF-16 or UTF-32; send JSON as UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedJson(f"the body is not UTF-8 (invalid byte at offset {error.start})") from None
    return text[1:] if text.startswith(_UTF8_BOM) else text


def too_deep(value: Any) -> bool:
    """Whether ``value``'s arrays and objects nest deeper than :data:`MAX_DEPTH`: a walk
    over the containers only (no recursion), so a long string costs nothing."""
    if type(value) not in (dict, list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        for child in item.values() if type(item) is dict else item:
            if type(child) in (dict, list):
                if depth >= MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


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


#: One decoder (``json.loads`` with hooks would build one per call).
_DECODER = json.JSONDecoder(parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant)
