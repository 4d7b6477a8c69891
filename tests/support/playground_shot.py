"""Regenerates ``docs/playground.png``: the bundled networks served offline, Chromium at
1440x900 on hello_world after one chat (its first sample query)::

    .venv/bin/python -m tests.support.playground_shot            # writes docs/playground.png
    .venv/bin/python -m tests.support.playground_shot out.png

Uses Debian's /usr/bin/chromium (``PLAYGROUND_CHROMIUM``) through Playwright, like the
playground's browser tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.servers import ROOT, start_server

DEFAULT_OUTPUT = ROOT / "docs" / "playground.png"
AGENT = "hello_world"


def take(output: Path) -> None:
    from playwright.sync_api import sync_playwright

    with start_server(http=True) as server, sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(15_000)
            page.goto(f"{server.http_base}/#{AGENT}")
            page.locator("svg.graph g.node").first.wait_for()
            page.locator("button.sample").first.click()  # the network's own first sample query
            page.click("#send")
            page.locator(".message.agent").wait_for()
            page.wait_for_function("() => !document.querySelector('.message.agent.pending')")
            page.mouse.move(0, 0)  # no hover highlight in the picture
            page.screenshot(path=str(output))
        finally:
            browser.close()


def main(argv: list[str]) -> int:
    output = Path(argv[0]) if argv else DEFAULT_OUTPUT
    take(output)
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
