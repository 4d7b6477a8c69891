"""The garbage collector's settings of a serving process (neuro_san/cli/heap.py)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from neuro_san.cli.heap import THRESHOLDS
from tests.support.servers import start_server

#: Starts a server: not in `make test-fast`.
pytestmark = pytest.mark.slow


def test_settle_heap_freezes_start_up_and_raises_thresholds() -> None:
    # In a process of its own: freezing the test runner's heap would outlive the test.
    probe = (
        "import gc; from neuro_san.cli.heap import settle_heap; "
        "before = gc.get_threshold(); settle_heap(); "
        "print(before, gc.get_threshold(), gc.get_freeze_count())"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    before, after, frozen = re.fullmatch(r"(\(.*?\)) (\(.*?\)) (\d+)\n", out).groups()  # type: ignore[union-attr]
    assert before == "(700, 10, 10)"  # CPython's, so the change below is ours
    assert after == str(THRESHOLDS)
    assert int(frozen) > 1_000  # the modules imported so far


def test_serve_settles_its_heap_before_traffic() -> None:
    with start_server() as server:
        log = server.log()
    found = re.search(r"garbage collector: (\d+) start-up objects frozen, thresholds \(7000, 20, 20\)", log)
    assert found, log
    assert int(found.group(1)) > 10_000  # grpc, aiohttp, protobuf and the networks
    # Settled before the server says it is ready, so the first burst finds it done.
    assert log.index("garbage collector") < log.index("READY")
