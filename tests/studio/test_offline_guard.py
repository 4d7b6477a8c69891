"""The offline guard (tests/support/offline/) the studio comparison's servers run under: a
fresh interpreter with it on its ``PYTHONPATH`` is refused the internet at once, in the
guard's words, by plain sockets, asyncio's loop, uvloop and the HTTP clients on them,
while loopback and Unix sockets work.

The probe (tests/studio/offline_probe.py) runs in a subprocess, as the servers do: the
guard installs at start-up, never in this process. Without the guard the refusals would
be the machine's own (a DNS failure, an unreachable network, a timeout), none naming the
guard, so these tests fail.
"""

from __future__ import annotations

import _socket
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.offline import GUARD_DIR, MARK, ON, offline_env, offline_pythonpath
from tests.support.offline.sitecustomize import local_host

PROBE = Path(__file__).with_name("offline_probe.py")
#: The probe's attempts that stay on this host; every other one reaches for the internet.
LOCAL = ("loopback", "localhost", "unix")
#: A refusal is immediate; without the guard a connect to TEST-NET waits out its timeout.
FAST = 1.0


def _clean_env(pythonpath: str) -> dict[str, str]:
    # The guard alone decides: no PYTHONPATH of this run's (it may name another venv's code).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    return {**env, "PYTHONPATH": pythonpath}


def _probe(python: str) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [python, str(PROBE)], env=_clean_env(offline_pythonpath()), cwd=PROBE.parent,
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def _pythons() -> list[Any]:
    studio = os.environ.get("NEURO_SAN_STUDIO_PYTHON", "")
    skip = pytest.mark.skipif(not studio, reason="set NEURO_SAN_STUDIO_PYTHON to probe upstream's venv too")
    return [pytest.param(sys.executable, id="ours"), pytest.param(studio, id="studio", marks=skip)]


@pytest.mark.parametrize("python", _pythons())
def test_the_internet_is_refused_at_once_and_loopback_is_not(python: str) -> None:
    probed, stderr = _probe(python)
    results: dict[str, dict[str, Any]] = probed["results"]
    uvloop = subprocess.run([python, "-c", "import uvloop"], capture_output=True).returncode == 0
    assert probed["loops"] == (["asyncio", "uvloop"] if uvloop else ["asyncio"])
    assert ON in stderr, stderr
    local = {name: outcome for name, outcome in results.items() if name.endswith(LOCAL)}
    remote = {name: outcome for name, outcome in results.items() if name not in local}
    # Every way to connect was tried both ways (loops, and the clients where installed).
    assert len(local) >= 2 + 2 * len(probed["loops"]) and len(remote) >= 8 + 5 * len(probed["loops"]), results
    assert all(outcome["ok"] for outcome in local.values()), local
    wrong = {
        name: outcome for name, outcome in remote.items()
        if outcome["ok"] or MARK not in outcome["message"] or outcome["seconds"] > FAST
    }  # fmt: skip
    assert not wrong, wrong
    # The target is named, and the refusal is in the process's stderr (a server's log) too.
    assert "192.0.2.1:80 refused" in results["socket test-net"]["message"]
    assert "example.com:443 refused" in results["socket getaddrinfo name"]["message"]
    assert "[2001:db8::1]:80 refused" in results["socket ipv6 test-net"]["message"]
    assert f"{MARK}: example.com:80 refused" in stderr


def test_the_sitecustomize_it_shadows_still_runs_offline(tmp_path: Path) -> None:
    """A venv's own ``sitecustomize`` (Debian's Python has one) runs after the guard, guarded."""
    (tmp_path / "sitecustomize.py").write_text(
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=3)\n"
        "except OSError as error:\n"
        "    print('shadowed sitecustomize:', error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", "print('main')"], env=_clean_env(offline_pythonpath(tmp_path)),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"shadowed sitecustomize: [Errno 111] {MARK}: 192.0.2.1:80 refused", "main"]
    assert ON in done.stderr


def test_offline_env_puts_the_guard_first() -> None:
    env = offline_env({"PYTHONPATH": os.pathsep.join(["/a", "/b"]), "HOME": "/h"})
    assert env == {"PYTHONPATH": os.pathsep.join([str(GUARD_DIR), "/a", "/b"]), "HOME": "/h"}
    assert offline_env({})["PYTHONPATH"] == str(GUARD_DIR)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
        ("::ffff:127.0.0.1", True), ("0.0.0.0", True), ("::", True), (None, True), ("", True),
        ("localhost", True), ("LOCALHOST.", True), ("api.localhost", True), (b"localhost", True),
        ("192.0.2.1", False), ("10.0.0.1", False), ("2001:db8::1", False), ("::ffff:192.0.2.1", False),
        ("example.com", False), ("raw.githubusercontent.com", False), ("localhost.example.com", False),
    ],
)  # fmt: skip
def test_what_counts_as_this_host(host: Any, local: bool) -> None:
    assert local_host(host) is local


def test_importing_the_guard_does_not_install_it_here() -> None:
    """Only start-up's ``import sitecustomize`` installs it: this process stays as it was."""
    assert str(GUARD_DIR) not in sys.path
    assert type(_socket.getaddrinfo).__name__ == "builtin_function_or_method"
    assert "connect" not in vars(socket.socket)  # _socket.socket's own, not the guard's
