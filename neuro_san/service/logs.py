"""Logging: JSON lines for machines, plain text for a terminal, with request context.

Every record made while serving a call carries that call's ``request_id`` and
``agent`` (from a context variable the servicer sets, so nothing threads them by
hand). ``AGENT_SERVICE_LOG_JSON=1`` forces JSON, ``0`` forces plain; by default a TTY
gets plain text. What is logged never includes sly_data, message text or credentials:
the code logs names, ids, statuses and durations only.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from typing import Any

from neuro_san.settings import SettingError, current

#: (request_id, agent) of the call being served.
CALL: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("neuro_san_call", default=None)

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        call = CALL.get()
        if call is not None:
            record.request_id, record.agent = call
        return True


#: One encoder for every line: ``json.dumps(..., ensure_ascii=False)`` builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


class JsonFormatter(logging.Formatter):
    """One JSON object per line. Runs once per call served (the per-call INFO line), so
    the second's text is formatted once per second, not once per line."""

    _second = -1
    _second_text = ""

    def _time(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:
            self._second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return f"{self._second_text}.{int(record.msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self._time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return _ENCODER.encode(entry)


class PlainFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        request_id = getattr(record, "request_id", None)
        return f"{text} [{getattr(record, 'agent', '')} {request_id}]" if request_id else text


def _json_setting() -> bool:
    """``AGENT_SERVICE_LOG_JSON`` (a switch), else JSON unless stderr is a terminal. A
    malformed value is refused by the command's settings check (serve logs that refusal
    through this handler, so here it falls back to the default instead of raising)."""
    try:
        choice = current().value("AGENT_SERVICE_LOG_JSON")
    except SettingError:
        choice = None
    return bool(choice) if choice is not None else not sys.stderr.isatty()


def configure_logging(level: str = "INFO", json_logs: bool | None = None) -> None:
    """Install one handler on the root logger (stderr), replacing any."""
    if json_logs is None:
        json_logs = _json_setting()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_logs else PlainFormatter())
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # Neither formatter shows the caller's file and line, thread or process (a worker's pid
    # is added by its own filter), so each record need not look them up: the logging
    # HOWTO's "Optimization" knobs, ~20 % of the per-call INFO line's cost.
    logging._srcfile = None  # type: ignore[attr-defined]
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    root.setLevel(level.upper())
    # Chatty libraries stay at WARNING unless we are debugging them on purpose.
    for name in ("grpc", "asyncio", "aiohttp.access"):
        logging.getLogger(name).setLevel(max(root.level, logging.WARNING))
