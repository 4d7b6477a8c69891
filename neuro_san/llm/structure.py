"""``structure_formats: json``: lift the first JSON object out of an answer."""

from __future__ import annotations

import json
from typing import Any

_decoder = json.JSONDecoder()


def extract_json_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """The first JSON object in ``text`` (also inside a ```json fence) and the text
    without it. Returns ``(None, text)`` when there is none."""
    start = text.find("{")
    while start != -1:
        try:
            value, end = _decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            before, after = text[:start], text[end:]
            fence = before.rstrip().endswith(("```json", "```"))
            if fence and after.lstrip().startswith("```"):
                before = before.rstrip().removesuffix("```json").removesuffix("```")
                after = after.lstrip()[3:]
            return value, (before + after).strip()
        start = text.find("{", end)
    return None, text
