"""Run a Python process offline: this folder first on its ``PYTHONPATH``, so its
``sitecustomize.py`` (the guard: loopback only, see there) loads at the process's start-up.

For the server processes a test starts; the test's own process is left as it is (the
guard installs only as ``sitecustomize``, never on import of this package).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tests.support.offline.sitecustomize import MARK, ON

__all__ = ["GUARD_DIR", "MARK", "ON", "offline_env", "offline_pythonpath"]

GUARD_DIR = Path(__file__).resolve().parent


def offline_pythonpath(*entries: str | os.PathLike[str]) -> str:
    """A ``PYTHONPATH`` value: the guard first (ahead of any other ``sitecustomize``), then
    ``entries``."""
    return os.pathsep.join([str(GUARD_DIR), *(os.fspath(entry) for entry in entries if os.fspath(entry))])


def offline_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the guard put first on its ``PYTHONPATH`` (what it held kept after)."""
    return {**env, "PYTHONPATH": offline_pythonpath(*env.get("PYTHONPATH", "").split(os.pathsep))}
