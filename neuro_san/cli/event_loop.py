"""``AGENT_EVENT_LOOP``: the asyncio event loop ``neuro-san serve`` runs on.

``auto`` (the default) is uvloop when it is installed (the ``fast`` extra) and asyncio's
own loop otherwise; ``uvloop`` insists on it; ``asyncio`` keeps asyncio's loop even when
uvloop is there (tests run the server on both: transports differ, see
``gateway/connection_guard.py``). A value that is neither, or ``uvloop`` without uvloop,
is refused at start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from neuro_san.settings import process_env

LOOP_ENV = "AGENT_EVENT_LOOP"
CHOICES = ("auto", "uvloop", "asyncio")

Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def loop_runner(env: Mapping[str, str] | None = None) -> Runner:
    """``asyncio.run`` or ``uvloop.run`` as the setting asks; ValueError says what is wrong."""
    choice = ((process_env() if env is None else env).get(LOOP_ENV, "") or "auto").strip().lower()
    if choice not in CHOICES:
        raise ValueError(f"{LOOP_ENV} must be one of {', '.join(CHOICES)}, not {choice!r}")
    if choice == "asyncio":
        return asyncio.run
    try:
        # Optional (the `fast` extra), and only when chosen.
        import uvloop
    except ImportError:
        if choice == "uvloop":
            missing = f"{LOOP_ENV}=uvloop, but uvloop is not installed: pip install 'neuro-san-grpc[fast]'"
            raise ValueError(missing) from None
        return asyncio.run
    return uvloop.run  # type: ignore[no-any-return]
