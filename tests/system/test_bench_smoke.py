"""The benchmark must keep running: ``python -m bench.run --smoke`` end to end, bounded in
time, and its JSON must hold every scenario. Figures are not checked: benchmarks measure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.frontends import A2A_BINDINGS
from bench.run import SCENARIOS

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_smoke_runs_every_scenario(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    report = json.loads((tmp_path / "latest.json").read_text())
    assert set(SCENARIOS) <= set(report["scenarios"]), sorted(report["scenarios"])
    assert report["machine"]["cores"] >= 1
    scenarios = report["scenarios"]
    # Each scenario ran and served chats (how fast is not the test's business).
    for name in ("S1", "S2", "S3", "S4"):
        assert scenarios[name]["completed"] > 0, name
        assert scenarios[name]["failed"] == 0, (name, scenarios[name]["failure_kinds"])
    assert scenarios["S5"]["completed"] == scenarios["S5"]["chats"]
    assert scenarios["S6"]["http"]["completed"] > 0 and scenarios["S6"]["grpc"]["completed"] > 0
    assert scenarios["S7"]["completed"] == scenarios["S7"]["chats"]
    assert scenarios["S7"]["floor"]["completed"] == scenarios["S7"]["chats"]
    assert scenarios["S7"]["workers_auto"]["completed"] == scenarios["S7"]["chats"]
    assert scenarios["S7"]["floor_auto"]["completed"] == scenarios["S7"]["chats"]
    assert scenarios["S8"]["burst_floor_auto"]["completed"] == scenarios["S5"]["chats"]
    for workers in ("workers_1", "workers_auto"):
        assert scenarios["S8"][workers]["completed"] > 0 and scenarios["S8"][workers]["failed"] == 0, workers
    for transport in ("http", "grpc"):  # token streaming: deltas came, over both
        assert scenarios["S9"][transport]["deltas"] > 0 and scenarios["S9"][transport]["failed"] == 0, transport
    assert scenarios["S9"]["burst"]["completed"] == scenarios["S9"]["burst"]["chats"]
    assert scenarios["S9"]["relay"]["deltas"] > 0 and scenarios["S9"]["relay"]["failed"] == 0  # the token floor
    # Every front-end served answered (and REST with the filters the front-ends chat with).
    for frontend in ("rest", "rest_tokens", "rest_maximal", "rest_tokens_maximal", "mcp", "a2a", "openai", "agui"):
        row = scenarios["S10"][frontend]
        assert not row.get("absent"), frontend
        assert row.get("absent") or (row["completed"] > 0 and row["failed"] == 0), (frontend, row)
    # A2A against the SDK's own server: each binding answered on both, and has its ratio.
    for binding in A2A_BINDINGS:
        pair = scenarios["S10"]["a2a_sdk"][binding]
        for server in ("ours", "sdk"):
            row = pair[server]
            assert row["completed"] > 0 and row["failed"] == 0, (binding, server, row["failure_kinds"])
        assert "to_sdk_plus_rest" in pair, binding
    assert "S10 A2A gRPC SendStreamingMessage: ours / (SDK + REST tokens)" in completed.stdout
    assert scenarios["startup"]["first_chat_ok"]
    assert "S1 echo, 1 client, HTTP" in completed.stdout
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.slow
def test_census_counts_what_a_chat_in_flight_keeps_alive() -> None:
    """``bench.census``: a small burst held on the fake LLM; the census sees each chat's
    coroutines (the server's chat handler among them) and names them with --detail."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench.census", "--chats", "40", "--latency-ms", "3000", "--detail"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    first = completed.stdout.splitlines()[0]
    assert first.startswith("40 chats in flight; "), first
    per_chat = float(first.split("; ")[1].split(" tracked")[0].replace(",", ""))
    assert per_chat > 20, first  # each chat holds at least its ~20 coroutines while it waits
    assert "NetworkRunner._turn (neuro_san)" in completed.stdout
