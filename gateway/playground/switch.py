"""``--no-playground`` and ``AGENT_PLAYGROUND``: whether ``/`` serves the app."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from neuro_san.core.env_settings import env_flag
from neuro_san.settings import process_env

ENV_VAR = "AGENT_PLAYGROUND"


def add_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--no-playground`` flag, shared by ``serve`` and the standalone gateway."""
    parser.add_argument(
        "--no-playground", action="store_true",
        help="do not serve the web playground at / (AGENT_PLAYGROUND=0); / still answers health",
    )


def playground_enabled(no_playground_flag: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """On unless the flag is given or ``AGENT_PLAYGROUND`` says off.

    A value that is neither on nor off is refused (a typo must not silently publish or
    hide the page).
    """
    if no_playground_flag:
        return False
    return env_flag(process_env() if env is None else env, ENV_VAR, True)
