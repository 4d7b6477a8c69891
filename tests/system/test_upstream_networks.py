"""Every network neuro-san 0.7.15 ships (its ``registries/`` and ``coded_tools/``) loads
on our server, and ``list``, ``function`` and ``connectivity`` answer exactly as a live
neuro-san 0.7.15 serving the same files does.

Opt-in, like tests/client/test_upstream_client.py: it needs a python with neuro-san 0.7.15
installed, named by ``NEURO_SAN_UPSTREAM_PYTHON``; it reads the networks from that
installation (nothing of upstream's is copied into this repository)::

    NEURO_SAN_UPSTREAM_PYTHON=/tmp/ns07/bin/python .venv/bin/python -m pytest tests/system/test_upstream_networks.py
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import free_port, start_server

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")
pytestmark = [
    pytest.mark.slow,  # starts servers (ours and upstream) when opted in
    pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to compare with neuro-san 0.7"),
]


def _get(base: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(base + path, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")[:300]


def _package(tmp_path: Path) -> Path:
    code = "import neuro_san, os; print(os.path.dirname(neuro_san.__file__))"
    # Run outside the repository, or `import neuro_san` would find our package.
    out = subprocess.run([UPSTREAM, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    return Path(out.stdout.strip())


@contextlib.contextmanager
def _upstream_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "upstream.log").open("w")
    command = [UPSTREAM, "-m", "neuro_san.service.main_loop.server_main_loop", "--http_port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    process = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError):
                if _get(base, "/api/v1/list")[0] == 200:
                    break
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "upstream.log").read_text()
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        process.wait(15)
        log.close()


def _with_empty_tools(answer: tuple[int, Any]) -> tuple[int, Any]:
    """A Connectivity answer with ``"tools": []`` written out where it was left out."""
    status, body = answer
    if not isinstance(body, dict) or "connectivity_info" not in body:
        return answer
    nodes = [{**node, "tools": node.get("tools", [])} for node in body["connectivity_info"]]
    return status, {**body, "connectivity_info": nodes}


def _answers(base: str, names: list[str]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for name in names:
        for what in ("function", "connectivity"):
            answers[f"{name} {what}"] = _get(base, f"/api/v1/{name}/{what}")
    return answers


def test_shipped_networks_answer_as_neuro_san_does(tmp_path: Path) -> None:
    package = _package(tmp_path)
    manifest = package / "registries" / "manifest.hocon"
    env = {"AGENT_TOOL_PATH": str(package / "coded_tools")}
    with _upstream_server(tmp_path) as upstream:
        status, theirs = _get(upstream, "/api/v1/list")
        assert status == 200
        names = sorted(a["agent_name"] for a in theirs["agents"]) + ["deep/math_guy"]  # the private one too
        expected = _answers(upstream, names)
    with start_server(manifest=manifest, env=env, http=True, extra_args=[]) as ours:
        base = ours.http_base
        status, listing = _get(base, "/api/v1/list")
        actual = _answers(base, names)
        log = ours.log()
    assert status == 200
    differences = []
    by_name = lambda listing: sorted(listing["agents"], key=lambda a: a["agent_name"])  # noqa: E731
    if by_name(listing) != by_name(theirs):
        differences.append(f"list:\n  neuro-san {by_name(theirs)}\n  ours      {by_name(listing)}")
    for key, answer in expected.items():
        if actual[key] == answer:
            continue
        if _with_empty_tools(actual[key]) == answer:
            differences.append(f"{key}: only neuro-san's empty 'tools' lists differ (issue 12)")
        else:
            differences.append(f"{key}:\n  neuro-san {answer}\n  ours      {actual[key]}")
    assert not differences, "\n".join(differences) + "\n\nour server's log:\n" + log[-4000:]
