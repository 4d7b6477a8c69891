"""The settings read from the environment (neuro_san/core/env_settings.py): one grammar
for every switch."""

from __future__ import annotations

import pytest

from neuro_san.core.env_settings import env_flag


def test_the_switch_grammar() -> None:
    assert [env_flag({"X": v}, "X", False) for v in ("1", "TRUE", "yes", " on ")] == [True] * 4
    assert [env_flag({"X": v}, "X", True) for v in ("0", "False", "NO", "off")] == [False] * 4
    assert env_flag({}, "X", True) and not env_flag({"X": " "}, "X", False)
    with pytest.raises(ValueError, match="X='ture' is not a switch"):
        env_flag({"X": "ture"}, "X", True)
