"""``node`` with a test folder's npm packages installed, or the test skipped saying why.

Each Node-driven test (the gRPC client, the OpenAI and AG-UI SDKs) keeps a ``package.json``
and its lock in a folder of its own under ``tests/``; ``npm install`` runs there once, into
a git-ignored ``node_modules``. Skipped only without node or npm on PATH, or when the
registry cannot be reached: never a silent pass.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def node_with(folder: Path, package: str, what: str) -> str:
    """The path of ``node``, once ``package`` (``@ag-ui/client``) is installed in ``folder``;
    ``what`` names the test in the skip message."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are needed for the {what} test (not on PATH)")
    marker = folder / "node_modules" / package / "package.json"
    if not marker.exists():
        install = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder, capture_output=True, text=True, timeout=300,
        )
        if install.returncode != 0 or not marker.exists():
            pytest.skip(f"npm install failed (is the npm registry reachable?): {install.stderr.strip()[-500:]}")
    return node
