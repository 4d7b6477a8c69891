"""The playground at the widths people use (a phone, a small laptop, a desktop), how it
shows an LLM failure, and what it does after an unknown agent: headless Debian chromium
against one real ``neuro-san serve`` whose every LLM call goes to the fake LLM (echoing,
or answering an HTTP error when asked to fail). Screenshots go to the test's tmp_path."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm import FakeLlmServer, RecordedRequest, Reply
from tests.support.browser import launch_browser
from tests.support.servers import ServerProcess, start_server

#: Takes seconds (starts a server and a browser): not in `make test-fast`.
pytestmark = pytest.mark.slow

TIMEOUT_MS = 15_000
FAIL = "please fail"
LLM_MESSAGE = "the model refuses this request"

# Every element's box, clipped by the boxes of its ancestors that clip (a scroll box, the
# SVG), must lie inside the page's width; and the page itself must not scroll sideways.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const outside = [];
  for (const node of document.querySelectorAll('body *')) {
    const rect = node.getBoundingClientRect();
    if (!rect.width && !rect.height) continue;
    let left = rect.left;
    let right = rect.right;
    for (let up = node.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX === 'visible') continue;
      const box = up.getBoundingClientRect();
      left = Math.max(left, box.left);
      right = Math.min(right, box.right);
    }
    if (right <= left) continue;  // clipped away: scrolled out of its box
    if (left < -0.5 || right > width + 0.5) {
      outside.push(`${node.tagName.toLowerCase()}#${node.id}.${node.getAttribute('class') || ''} `
        + `[${Math.round(left)}, ${Math.round(right)}]`);
    }
  }
  // And no text spills out of its own button or panel (a long network name, say).
  const spilling = [...document.querySelectorAll('button, .top, .agents, .center, .thinking')]
    .filter((node) => node.offsetParent !== null && node.scrollWidth > node.clientWidth + 1)
    .map((node) => `${node.tagName.toLowerCase()}.${node.className} ${node.scrollWidth} > ${node.clientWidth}`);
  const scrollWidth = document.documentElement.scrollWidth;
  return { scrollWidth, width, innerWidth, outside: outside.slice(0, 12), spilling };
}"""

PANELS = """() => Object.fromEntries(['.top', 'nav.agents', 'section.center', 'aside.thinking', '#send', '#user-input']
  .map((selector) => {
    const rect = document.querySelector(selector).getBoundingClientRect();
    return [selector, { left: rect.left, right: rect.right, top: rect.top, bottom: rect.bottom, width: rect.width }];
  }))"""

# The search box's placeholder, measured in the box's own font, against the room inside it.
PLACEHOLDER = """() => {
  const input = document.getElementById('agent-search');
  const style = getComputedStyle(input);
  const context = document.createElement('canvas').getContext('2d');
  context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  return {
    text: context.measureText(input.placeholder).width,
    room: input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
  };
}"""


def failing_on_request(request: RecordedRequest) -> Reply | None:
    """An HTTP 400 from the provider when the user asks for it; the echo otherwise."""
    return Reply.error(400, LLM_MESSAGE) if FAIL in request.last_input_text() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


@pytest.fixture(scope="module")
def failing() -> Iterator[ServerProcess]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    fake = FakeLlmServer(rule=failing_on_request)
    asyncio.run_coroutine_threadsafe(fake.start(), loop).result(10)
    try:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(max_attempts=1))}
        with start_server(env=env, http=True) as running:
            yield running
    finally:
        asyncio.run_coroutine_threadsafe(fake.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors


def send(page: Any, text: str) -> Any:
    answers = page.locator(".message.agent")
    before = answers.count()
    page.fill("#user-input", text)
    page.click("#send")
    answer = answers.nth(before)
    answer.wait_for()
    page.wait_for_function("() => !document.querySelector('.message.agent.pending')")
    return answer


def test_the_page_fits_a_phone_a_small_laptop_and_a_desktop(page: Any, failing: ServerProcess, tmp_path: Path) -> None:
    page.goto(failing.http_base + "/#hello_world")
    page.locator("svg.graph g.node[data-name='synonymizer']").wait_for()
    assert "hello there" in send(page, "hello there").inner_text()
    for width in (1440, 1024, 360):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function("(width) => document.documentElement.clientWidth <= width", arg=width)
        fit = page.evaluate(OVERFLOW)
        page.screenshot(path=str(tmp_path / f"playground_{width}.png"), full_page=True)
        assert fit["scrollWidth"] <= fit["width"] <= fit["innerWidth"], (width, fit)
        assert not fit["outside"] and not fit["spilling"], (width, fit)
        panels = page.evaluate(PANELS)
        for selector, box in panels.items():
            assert box["left"] >= 0 and box["right"] <= fit["width"] + 0.5, (width, selector, box)
        thinking, center, agents = panels["aside.thinking"], panels["section.center"], panels["nav.agents"]
        if width >= 1024:  # side by side, each wide enough to read
            assert thinking["top"] == center["top"] == agents["top"], (width, panels)
            assert thinking["width"] >= 280 and center["width"] >= 420, (width, panels)
        else:  # stacked
            assert agents["bottom"] <= center["top"] and center["bottom"] <= thinking["top"], panels
        placeholder = page.evaluate(PLACEHOLDER)
        assert placeholder["text"] <= placeholder["room"], (width, placeholder)
    page.click("#key-toggle")  # the API key panel, open on the phone, wraps in the header
    page.locator("#key-panel").wait_for()
    fit = page.evaluate(OVERFLOW)
    assert fit["scrollWidth"] <= fit["width"] and not fit["outside"] and not fit["spilling"], fit


def test_an_llm_error_is_shown_once_with_its_label(page: Any, failing: ServerProcess, tmp_path: Path) -> None:
    page.goto(failing.http_base + "/#echo")
    page.locator("svg.graph g.node[data-name='echoer']").wait_for()
    answer = send(page, FAIL)
    page.screenshot(path=str(tmp_path / "llm_error.png"), full_page=True)
    assert "failed" in (answer.get_attribute("class") or "")
    text = page.locator("body").inner_text()
    assert text.count(LLM_MESSAGE) == 1, text
    assert "HTTP 200" not in text
    assert answer.inner_text().startswith("LLM error"), answer.inner_text()
    assert page.locator("#error").is_hidden()
    assert page.locator("#send").is_enabled()  # the agent is fine: the next turn may work
    assert "again" in send(page, "again").inner_text()


def test_an_unknown_agent_clears_the_graph_and_disables_send(page: Any, failing: ServerProcess, tmp_path: Path) -> None:
    page.goto(failing.http_base + "/#hello_world")
    page.locator("svg.graph g.node[data-name='synonymizer']").wait_for()
    assert page.locator("#send").is_enabled()
    page.goto(failing.http_base + "/#no_such_network")  # typed into the address bar: hashchange
    page.locator("#error").wait_for()
    page.screenshot(path=str(tmp_path / "unknown_agent.png"), full_page=True)
    assert "HTTP 404" in page.locator("#error").inner_text()
    assert page.locator("#graph svg").count() == 0 and page.locator("#graph .legend").count() == 0
    assert page.locator("#send").is_disabled() and page.locator("#user-input").is_disabled()
    assert "does not exist" in page.locator("#agent-header").inner_text()
    page.click("#agent-list button[data-agent='echo']")  # a valid agent makes it usable again
    page.locator("svg.graph g.node[data-name='echoer']").wait_for()
    assert page.locator("#send").is_enabled() and page.locator("#error").is_hidden()
    assert "hi" in send(page, "hi").inner_text()
