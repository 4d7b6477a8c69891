"""Headless Debian chromium driven by Playwright, for the playground's browser tests.

Playwright's own browser download is never used (it cannot reach its CDN here, and CI
must not depend on it): it launches ``/usr/bin/chromium`` with the flags that keep it
from reaching the network on its own. When chromium or playwright is missing the tests
skip, except under CI (``CI=true``), where ``make test`` installs both and a missing
browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("PLAYGROUND_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "playground"
#: Playwright adds --headless and a fresh temporary --user-data-dir itself.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"browser tests cannot run under CI: {reason} (make test installs it)")
    pytest.skip(f"{reason}: run `make test` (as root it installs Debian's chromium)")


def launch_browser() -> Iterator[Any]:
    """One headless chromium for a test module; each test opens its own context."""
    if not (CHROMIUM.exists() or shutil.which(str(CHROMIUM))):
        _missing(f"{CHROMIUM} is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
        )
        try:
            yield browser
        finally:
            browser.close()
