"""What keeps ``make test-fast`` fast: a test not marked ``slow`` starts no server process
and no system service.

``slow`` (see pyproject's markers) marks every test that starts a server in another
process (``neuro-san serve``, the fake LLM or A2A peer as a process, upstream neuro-san) or
a system service (redis-server, haproxy, chromium, node and the npm tools on it), or takes
seconds. The guard below makes the rule hold rather than hoping it does: while a test
without the mark runs (its fixtures' set-up included), starting one of those fails the test,
naming what it started. One-shot interpreters (``python -c`` checks of what a fresh process
imports, a script that exits) are not servers and stay allowed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Any

#: Executables that are services (or run them): never in the fast tier.
SERVICES = frozenset({"redis-server", "haproxy", "chromium", "node", "npm", "npx"})
#: ``python -m`` modules that serve until stopped.
SERVER_MODULES = frozenset({
    "tests.fakes.fake_llm",
    "tests.a2a_peer",
    "tests.support.cluster",
    "neuro_san.service.main_loop.server_main_loop",  # upstream neuro-san, for the parity tests
})


class StartsAServer(Exception):
    """A test outside the slow tier started a server or a service. Not an OSError, so that
    code expecting a failed start does not take it for one."""


def server_started_by(argv: Sequence[str]) -> str | None:
    """What ``argv`` would start that the fast tier must not (a short name), or None."""
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program in SERVICES:
        return program
    args = list(argv[1:])
    if program in ("neuro-san", "neuro_san") and "serve" in args:
        return "neuro-san serve"
    if "-m" in args[:-1]:
        module = args[args.index("-m") + 1]
        if module == "neuro_san.cli.main" and "serve" in args:
            return "neuro-san serve"
        if module in SERVER_MODULES:
            return module
    return None


class Guard:
    """Installed once per session: wraps ``subprocess.Popen`` (which asyncio's subprocesses
    use too) and refuses servers while ``current`` names a test outside the slow tier."""

    def __init__(self) -> None:
        self.current: str | None = None
        self._original: Any = None

    def install(self) -> None:
        original = self._original = subprocess.Popen.__init__
        guard = self

        def init(popen: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
            if guard.current is not None:
                argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
                started = server_started_by([os.fsdecode(a) for a in argv])
                if started is not None:
                    raise StartsAServer(
                        f"{guard.current} starts {started} but is not marked slow: mark it "
                        "`pytest.mark.slow` (make test-fast runs no server process and no service)"
                    )
            original(popen, args, *rest, **options)

        subprocess.Popen.__init__ = init  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        if self._original is not None:
            subprocess.Popen.__init__ = self._original  # type: ignore[method-assign]
            self._original = None


GUARD = Guard()
