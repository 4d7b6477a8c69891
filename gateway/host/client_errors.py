"""A client's mistake is one line in the log, never an ERROR with a traceback.

aiohttp's server logger reports a request it could not parse (a bad header, a line too
long, a broken chunked body: ``BadHttpMessage`` and the other 4xx
``HttpProcessingError``\\ s) as "Error handling request" at ERROR with the parser's
traceback, and a client that went away mid-answer as an "Unhandled exception". Neither is
ours to fix: :func:`quiet_client_errors` rewrites such a record into one line (WARNING for
a malformed request, INFO for a client gone) naming the reason. SDKs that log a refusal
twice, once as an ERROR traceback and once as the WARNING of the error they answer, have
the first turned into a DEBUG line by :func:`quiet_logged_refusals`. Every other record, a bug of
ours included, passes untouched.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

#: The logger aiohttp's request handler (web_protocol.RequestHandler) logs through.
AIOHTTP_SERVER_LOGGER = "aiohttp.server"
_STATUS_PREFIX = re.compile(r"^\d{3}, message:")


def _one_line(record: logging.LogRecord, level: int, reason: str | None) -> bool:
    """``record`` at ``level`` without its traceback (``reason`` appended); whether it is
    still to be emitted (the logger's level was checked for the original level)."""
    if reason is not None:
        record.msg, record.args = "%s: %s", (record.getMessage(), reason)
    record.levelno, record.levelname = level, logging.getLevelName(level)
    record.exc_info, record.exc_text, record.stack_info = None, None, None
    return logging.getLogger(record.name).isEnabledFor(level)


def is_malformed_http(error: BaseException | None) -> bool:
    """aiohttp could not parse the request or decode its body (bad gzip, broken chunks)."""
    if isinstance(error, HttpProcessingError):
        return 400 <= (error.code or 0) < 500
    return isinstance(error, RequestPayloadError)


def malformed_reason(error: BaseException) -> str:
    """The first line of what aiohttp says is wrong, without its "400, message:" prefix."""
    text = error.message if isinstance(error, HttpProcessingError) else str(error)
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if lines and _STATUS_PREFIX.match(lines[0]):
        lines = lines[1:]
    return (lines[0] if lines else "no reason given")[:200]


class _ClientErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if is_malformed_http(error):
            assert error is not None
            return _one_line(record, logging.WARNING, f"malformed HTTP request: {malformed_reason(error)}")
        if isinstance(error, (ConnectionResetError, BrokenPipeError)):  # aiohttp's own resets too
            return _one_line(record, logging.INFO, f"the client went away: {_first_line(str(error))}")
        return True


class _LoggedRefusals(logging.Filter):
    def __init__(self, messages: Iterable[str], errors: tuple[type[BaseException], ...],
                 excluding: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.messages = frozenset(messages)
        self.errors, self.excluding = errors, excluding

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        error = record.exc_info[1] if record.exc_info else None
        if record.msg in self.messages:
            return _one_line(record, logging.DEBUG, None)
        if isinstance(error, self.errors) and not isinstance(error, self.excluding):
            return _one_line(record, logging.DEBUG, _first_line(str(error)))
        return True


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "no reason given")[:200]


def _install(logger_name: str, new: logging.Filter) -> None:
    logger = logging.getLogger(logger_name)
    if not any(type(existing) is type(new) for existing in logger.filters):  # idempotent
        logger.addFilter(new)


def quiet_client_errors() -> None:
    """aiohttp's reports of malformed requests and vanished clients as one line."""
    _install(AIOHTTP_SERVER_LOGGER, _ClientErrors())


def quiet_logged_refusals(
    logger_name: str, messages: Iterable[str] = (), errors: tuple[type[BaseException], ...] = (),
    excluding: tuple[type[BaseException], ...] = (),
) -> None:
    """Records of ``logger_name`` at ERROR whose message (its format string) is one of
    ``messages``, or whose exception is one of ``errors`` but none of ``excluding``
    (refusals the SDK reports again as the WARNING of its answer), become DEBUG lines
    without a traceback."""
    _install(logger_name, _LoggedRefusals(messages, errors, excluding))
