"""The structures of the AGENT messages a tool node journals, in neuro-san 0.7's shapes.

A coded tool and a ``/name`` (or remote) network called as a tool each journal, at
their own origin, "Received arguments:" before the call and "Got result:" after it.
A coded tool's result always says whether it failed (``tool_error``) and keeps a dict or
list result as a structure; an external network's result is its answer text and, as
upstream, carries no ``tool_error`` (a failed call is an error of the request).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def received_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool_start": True, "tool_args": json_safe(dict(arguments))}


def got_result(output: str) -> dict[str, Any]:
    """An external network's "Got result:"."""
    return {"tool_end": True, "tool_output": output}


def coded_tool_result(result: Any, text: str, error: bool) -> dict[str, Any]:
    """A coded tool's "Got result:": ``tool_output`` is the returned dict or list itself
    (as a structure), otherwise the text the model gets."""
    output = json_safe(result) if not error and isinstance(result, (dict, list)) else text
    return {"tool_end": True, "tool_error": error, "tool_output": output}
