"""A client's mistake is one WARNING line in the log, never an ERROR with a traceback.

aiohttp's server logger reports a request it could not parse (a bad header, a line too
long, a broken chunked body: ``BadHttpMessage`` and the other 4xx
``HttpProcessingError``\\ s) as "Error handling request" at ERROR with the parser's
traceback, and a client that went away mid-answer as an "Unhandled exception". Neither is
ours to fix: the filter installed by :func:`quiet_client_errors` rewrites such a record
into one line (WARNING for a malformed request, INFO for a client gone) naming the
reason; every other record, a bug of ours included, passes untouched.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

#: The logger aiohttp's request handler (web_protocol.RequestHandler) logs through.
AIOHTTP_SERVER_LOGGER = "aiohttp.server"


class _OneLineClientErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError) and 400 <= (error.code or 0) < 500:
            level, reason = logging.WARNING, f"malformed HTTP request ({error.code}): " + _first_line(error.message)
        elif isinstance(error, (ConnectionResetError, BrokenPipeError)):  # aiohttp's resets too
            level, reason = logging.INFO, f"the client went away: {_first_line(str(error))}"
        else:
            return True
        record.msg, record.args = "%s: %s", (record.getMessage(), reason)
        record.levelno, record.levelname = level, logging.getLevelName(level)
        record.exc_info, record.exc_text = None, None
        return True


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "no reason given")[:200]


_FILTER = _OneLineClientErrors()


def quiet_client_errors() -> None:
    """Install the filter on aiohttp's server logger (idempotent)."""
    logger = logging.getLogger(AIOHTTP_SERVER_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
