"""The start of every command: refuse a malformed setting, warn about an unknown one.

Each command checks the settings that apply to it (``serve``, ``gateway`` or ``client``), so a
typo in a server switch does not stop ``neuro-san list``. ``serve`` and ``gateway`` call this
once their logging is set up, so the refusal is one log line in the server's format; the
client commands print it on stderr.
"""

from __future__ import annotations

import logging
import sys

from neuro_san.settings.registry import current

log = logging.getLogger("neuro_san.settings")


def refuse_malformed(applies: str, logger: logging.Logger | None = None) -> bool:
    """True (after one line per malformed value) when a setting of ``applies`` is malformed;
    else False, after one WARNING per unknown ``AGENT_*`` variable when ``logger`` is given."""
    settings = current()
    problems = settings.problems(applies)
    for problem in problems:
        if logger is None:
            print(f"neuro-san: {problem}", file=sys.stderr)
        else:
            logger.error("not starting: %s", problem)
    if problems:
        return True
    if logger is not None:
        warn_unknown(logger)
    return False


def warn_unknown(logger: logging.Logger) -> None:
    """One WARNING per ``AGENT_*`` variable no setting declares (a typo is otherwise silent)."""
    for name, closest in current().unknown():
        hint = f": did you mean {closest}?" if closest else " (see neuro-san config for the known ones)"
        logger.warning("%s is not a setting this server knows, so it changes nothing%s", name, hint)
