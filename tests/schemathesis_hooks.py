"""Schemathesis hooks for the suite: read JSON-lines stream bodies, so every line of a
StreamingChat answer is validated against the ChatResponse schema (loaded through
SCHEMATHESIS_HOOKS by tests/gateway/transcoder/test_gateway_schemathesis.py)."""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.deserializer("application/json-lines")
def json_lines(ctx: Any, response: Any) -> Any:
    lines = [json.loads(line) for line in response.content.splitlines() if line.strip()]
    # The schema describes one ChatResponse; each line must be one. An error line
    # ({"error": Status}) is reported by the status/content checks, not here.
    bad = [line for line in lines if not isinstance(line, dict) or set(line) - {"response", "request"}]
    return bad[0] if bad and "error" not in bad[0] else (lines[0] if lines else {})
