"""The default toolbox (neuro-san 0.7.15's entries), and where each is implemented here."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

DEFAULT_TOOLBOX: Mapping[str, Any] = MappingProxyType(
    {
        "get_current_date_time": {
            "class": "get_current_date_time.GetCurrentDateTime",
            "description": (
                "Get the current date and time for a specified timezone. "
                "utc_offset has precedence over iana_timezone."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "utc_offset": {
                        "type": "int",
                        "description": (
                            "The UTC offset in hours (e.g., -5 for EST, 1 for CET). Must be between -24 and 24. "
                            "Has precedence over iana_timezone."
                        ),
                    },
                    "iana_timezone": {
                        "type": "string",
                        "description": "The IANA timezone string (e.g., 'America/New_York', 'Europe/Berlin').",
                    },
                },
                "required": [],
            },
        }
    }
)

#: Classes of the default toolbox and their native implementations. They are used by a
#: fully-qualified name, so they work whatever AGENT_TOOL_PATH says (neuro-san 0.7.15
#: loses get_current_date_time when AGENT_TOOL_PATH is set).
NATIVE_CLASSES: Mapping[str, str] = MappingProxyType(
    {"get_current_date_time.GetCurrentDateTime": "neuro_san.toolbox.get_current_date_time.GetCurrentDateTime"}
)

#: Entries neuro-san removed from its default toolbox; naming one gets this advice.
REMOVED_ENTRIES = frozenset(
    {"requests_get", "requests_post", "requests_patch", "requests_put", "requests_delete", "requests_toolkit"}
)
