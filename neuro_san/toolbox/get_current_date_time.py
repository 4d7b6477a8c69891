"""The default toolbox's ``get_current_date_time``: the time now in a given timezone."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from neuro_san.interfaces.coded_tool import CodedTool


def _timezone(utc_offset: Any, iana_timezone: Any) -> tzinfo | None:
    """``utc_offset`` (whole hours, strictly between -24 and 24) wins over
    ``iana_timezone``; None when neither is usable."""
    if isinstance(utc_offset, int) and not isinstance(utc_offset, bool) and -24 < utc_offset < 24:
        return timezone(timedelta(hours=utc_offset))
    if isinstance(iana_timezone, str) and iana_timezone in available_timezones():
        return ZoneInfo(iana_timezone)
    return None


class GetCurrentDateTime(CodedTool):
    async def async_invoke(self, args: dict[str, Any], sly_data: dict[str, Any]) -> str:
        utc_offset = args.get("utc_offset")
        # The LLM may send an explicit null for the optional timezone: UTC then, as when absent.
        iana_timezone = args.get("iana_timezone") or "UTC"
        zone = _timezone(utc_offset, iana_timezone)
        if zone is None:
            return (
                "Error: Both timezone inputs are invalid. Please provide either a valid UTC offset "
                "(-24 to 24) or a valid IANA timezone (see https://www.iana.org/time-zones).\n"
                f"Got utc_offset: {utc_offset}, iana_timezone: {iana_timezone}."
            )
        return str(datetime.now(zone))
