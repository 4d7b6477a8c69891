"""The core errors' helpers (neuro_san/core/errors.py): a client-supplied value an error
repeats is cut to ECHO_LIMIT characters (tests/system/test_echo_caps.py checks every
front-end on a real server)."""

from __future__ import annotations

from neuro_san.core.errors import ECHO_LIMIT, clip, echo

NAME = "x" * 7000


def test_the_helpers_cut_long_values_and_keep_short_ones() -> None:
    assert clip("calc") == "calc" and echo("calc") == "'calc'"
    assert clip(NAME) == "x" * ECHO_LIMIT + "… (7000 characters)"
    assert echo(NAME) == repr("x" * ECHO_LIMIT) + "… (7000 characters)"
