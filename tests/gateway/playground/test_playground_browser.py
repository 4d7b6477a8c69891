"""The playground in a real browser: headless Debian chromium, driven by Playwright,
against real ``neuro-san serve`` processes. One browser for the module, a fresh context
(so fresh storage) per test. Screenshots go to tests/artifacts/playground/."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.fakes.stream_fake import StreamFake
from tests.fakes.stream_wire import Script
from tests.support.browser import ARTIFACTS, launch_browser
from tests.support.servers import ServerProcess, start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

KEY = "key-for-the-playground"
TIMEOUT_MS = 15_000

# Records, in the page, every graph node that was lit up as "working" while it streamed.
WATCH_WORKING = """() => {
  window.__lit = [];
  new MutationObserver((records) => {
    for (const record of records) {
      // Lit now, or lit before this change (the class may come and go within one task).
      const node = record.target;
      const was = (record.oldValue || '').split(' ').includes('working');
      if (was || node.classList.contains('working')) window.__lit.push(node.dataset.name);
    }
  }).observe(document.getElementById('graph'),
             {attributes: true, attributeOldValue: true, subtree: true, attributeFilter: ['class']});
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


class Page:
    """A page on a fresh context that records every request and dialog it causes."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.requests: list[Any] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.post_data) for r in self.requests if r.url.endswith("/streaming_chat")]

    def send(self, text: str) -> Any:
        """Type, send, and wait for the answer of this turn; returns its locator."""
        answers = self.page.locator(".message.agent")
        before = answers.count()
        self.page.fill("#user-input", text)
        self.page.click("#send")
        answer = answers.nth(before)
        answer.wait_for()
        self.page.wait_for_function("() => !document.querySelector('.message.agent.pending')")
        return answer

    def assert_same_origin_only(self) -> None:
        origin = urlsplit(self.base)
        for request in self.requests:
            url = urlsplit(request.url)
            if url.scheme in ("data", "blob"):
                continue
            assert (url.scheme, url.netloc) == (origin.scheme, origin.netloc), request.url

    def close(self, screenshot: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
        self.context.close()


def test_math_guy_graph_chat_timeline_sly_data_and_continuation(browser: Any, server: ServerProcess) -> None:
    session = Page(browser, server.http_base)
    page = session.page
    page.goto(server.http_base + "/")

    page.fill("#agent-search", "coded_tool")  # matches a tag
    page.wait_for_function("() => document.querySelectorAll('#agent-list button.agent').length === 1")
    assert page.locator("#agent-list button.agent").get_attribute("data-agent") == "math_guy"
    page.fill("#agent-search", "")
    page.click("#agent-list button[data-agent='math_guy']")

    calculator = page.locator("svg.graph g.node[data-name='calculator']")
    calculator.wait_for()
    assert calculator.get_attribute("data-kind") == "coded_tool"
    assert "coded tool" in (calculator.locator("title").text_content() or "")
    front = page.locator("svg.graph g.node.front")
    assert front.get_attribute("data-name") == "math_guy"
    assert page.locator("svg.graph path.edge[data-from='math_guy'][data-to='calculator']").count() == 1
    front.click()
    assert "I do arithmetic." in page.locator("#node-details").inner_text()

    page.evaluate(WATCH_WORKING)
    page.fill("#sly-in", '{"units": "none"}')
    answer = session.send("6 * 7")
    assert "42" in answer.inner_text()
    assert json.loads(page.locator("#sly-out").inner_text()) == {"equals": 42}
    kinds = page.locator("#timeline .step-kind").all_inner_texts()
    assert {"tool call", "tool arguments", "progress", "tool result", "final answer"} <= set(kinds)
    # The stream's two usage reports (the network's, the request's total) carry the same numbers
    # here: shown once, labelled with its scope.
    assert [kind for kind in kinds if kind.startswith("token accounting")] == ["token accounting (network)"]
    nested = page.locator("#timeline .group.depth-2[data-origin='math_guy.calculator']")
    assert nested.count() == 1 and "evaluating" in nested.inner_text()
    assert "calculator" in page.evaluate("window.__lit")  # lit up while it worked
    assert page.locator("svg.graph g.node.working").count() == 0  # and no longer

    second = session.send("2 + 3")
    assert "5" in second.inner_text()
    first_body, second_body = session.chat_bodies()
    assert first_body["sly_data"] == {"units": "none"} and "chat_context" not in first_body
    assert first_body["chat_filter"] == {"chat_filter_type": "MAXIMAL"} and first_body["stream_tokens"] is True
    history = second_body["chat_context"]["chat_histories"][0]["messages"]
    assert [m["text"] for m in history if m["type"] == "HUMAN"] == ["6 * 7"]
    assert page.locator(".message.user").all_inner_texts() == ["6 * 7", "2 + 3"]
    page.screenshot(path=str(ARTIFACTS / "math_guy.png"))  # docs/playground.png: tests/support/playground_shot.py

    page.click("#copy-curl")
    curl = page.locator("#snippet").inner_text()
    assert curl.startswith(f"curl -N -X POST '{server.http_base}/api/v1/math_guy/streaming_chat'")
    assert '"chat_context"' in curl
    page.click("#copy-grpcurl")
    assert "agent-name: math_guy" in page.locator("#snippet").inner_text()
    page.click("#copy-python")
    python = page.locator("#snippet").inner_text()
    ran = subprocess.run([sys.executable, "-c", python], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert "AGENT_FRAMEWORK" in ran.stdout and "5" in ran.stdout.splitlines()[-1]

    with page.expect_download() as download:
        page.click("#export")
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["agent"] == "math_guy" and [t["user"] for t in exported["turns"]] == ["6 * 7", "2 + 3"]
    assert exported["turns"][0]["sly_data_out"] == {"equals": 42}

    page.click("#new-conversation")
    assert page.locator(".message").count() == 0 and page.locator("#timeline .step").count() == 0
    session.send("1 + 1")
    assert "chat_context" not in session.chat_bodies()[-1]

    assert not session.errors and not session.dialogs
    session.assert_same_origin_only()
    session.close("math_guy_new_conversation.png")


SLEEPY_NETWORK = {
    "llm_config": {"class": "scripted"},
    "metadata": {"description": "Naps before it answers.", "tags": ["test"]},
    "tools": [
        {"name": "sleeper", "function": {"description": "I wait."}, "instructions": "Use the napper.",
         "tools": ["napper"], "llm_config": {"class": "scripted", "reply": "Rested: {results}."}},
        {"name": "napper", "class": "napper.Napper",
         "function": {"description": "Naps.", "parameters": {
             "type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]}}},
    ],
}
NAPPER = """
import asyncio
from neuro_san.interfaces.coded_tool import CodedTool


class Napper(CodedTool):
    async def async_invoke(self, args, sly_data):
        await args["progress_reporter"].async_report_progress({"progress": 0.0}, "napping")
        await asyncio.sleep(2.0)  # the behaviour: a tool slow enough for the page to show its progress
        return "awake"
"""


@pytest.fixture(scope="module")
def sleepy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("sleepy")
    (root / "sleepy.hocon").write_text(json.dumps(SLEEPY_NETWORK))
    (root / "manifest.hocon").write_text(json.dumps({"sleepy.hocon": True}))
    (root / "coded_tools" / "sleepy").mkdir(parents=True)
    (root / "coded_tools" / "sleepy" / "napper.py").write_text(NAPPER)
    args = ["--tool-path", str(root / "coded_tools")]
    with start_server(root / "manifest.hocon", http=True, extra_args=args) as running:
        yield running


def test_the_timeline_fills_and_the_working_node_lights_up_while_the_stream_runs(
    browser: Any, sleepy: ServerProcess
) -> None:
    session = Page(browser, sleepy.http_base)
    page = session.page
    page.goto(sleepy.http_base + "/#sleepy")
    page.locator("svg.graph g.node[data-name='napper']").wait_for()
    header = [line for line in page.locator("#agent-header").inner_text().split("\n") if line.strip()]
    assert header == ["sleepy", "Naps before it answers."]
    page.fill("#user-input", "take a nap")
    page.click("#send")
    page.locator("#timeline .step.progress", has_text="napping").wait_for()
    # The answer has not come yet: what is on screen arrived while the stream runs.
    assert page.locator(".message.agent.pending").count() == 1
    assert page.locator("#timeline .step.tool-call").count() == 1
    assert page.locator("svg.graph g.node.working").get_attribute("data-name") == "napper"
    assert "napper working" in page.locator("#working").inner_text()
    page.screenshot(path=str(ARTIFACTS / "while_streaming.png"), full_page=True)
    page.wait_for_function("() => !document.querySelector('.message.agent.pending')")
    assert "awake" in page.locator(".message.agent").inner_text()
    assert page.locator("svg.graph g.node.working").count() == 0
    session.assert_same_origin_only()
    session.close("after_streaming.png")


def test_external_agents_are_told_apart_and_show_their_function(browser: Any, server: ServerProcess) -> None:
    session = Page(browser, server.http_base)
    page = session.page
    page.goto(server.http_base + "/#math_guy_passthrough")
    external = page.locator("svg.graph g.node[data-name='/math_guy']")
    external.wait_for()
    assert external.get_attribute("data-kind") == "external_agent"
    assert page.locator("svg.graph g.node.front").get_attribute("data-kind") == "llm_agent"
    assert page.locator(".legend").inner_text().split("\n") == ["agent", "external agent"]
    external.click()
    page.wait_for_function("() => document.getElementById('node-details').innerText.includes('I do arithmetic.')")
    page.goto(server.http_base + "/#hello_world")  # same page, new hash: hashchange picks it
    page.locator("svg.graph g.node[data-name='synonymizer']").wait_for()
    page.locator("button.sample").first.click()  # the network's first sample query fills the input
    assert page.locator("#user-input").input_value() == "hello world"
    session.assert_same_origin_only()
    session.close("external_agent.png")


def test_untrusted_text_stays_text(browser: Any, server: ServerProcess) -> None:
    session = Page(browser, server.http_base)
    page = session.page
    page.goto(server.http_base + "/#echo")
    page.locator("svg.graph g.node[data-name='echoer']").wait_for()
    payload = ("<img src=x onerror=alert(1)> [click me](javascript:alert(1)) "
               "<script>window.__pwned = 1</script> **bold** [docs](https://example.com/docs)")
    answer = session.send(payload)
    assert "<img src=x onerror=alert(1)>" in answer.inner_text()
    assert page.locator("img").count() == 0 and page.locator("script:not([src])").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert answer.locator(".unsafe-link").inner_text() == "click me"
    assert answer.locator("strong").inner_text() == "bold"
    link = answer.locator("a")
    assert link.get_attribute("href") == "https://example.com/docs"
    assert "noopener" in (link.get_attribute("rel") or "")
    assert page.evaluate("window.__pwned") is None
    assert "<img src=x onerror=alert(1)>" in page.locator("#timeline").inner_text()
    assert not session.dialogs and not session.errors
    session.assert_same_origin_only()  # no request for "x", nor for example.com
    assert not any(urlsplit(r.url).path == "/x" for r in session.requests)
    session.close("untrusted_text.png")


def test_api_errors_are_shown_with_status_and_message(browser: Any, server: ServerProcess) -> None:
    session = Page(browser, server.http_base)
    session.page.goto(server.http_base + "/#no_such_network")
    banner = session.page.locator("#error")
    banner.wait_for()
    assert "HTTP 404" in banner.inner_text() and "no_such_network" in banner.inner_text()
    session.page.fill("#sly-in", "[1, 2]")
    session.page.goto(server.http_base + "/#math_guy")
    session.page.reload()
    session.page.locator("svg.graph g.node[data-name='calculator']").wait_for()
    session.page.fill("#sly-in", "not json")
    session.page.fill("#user-input", "1 + 1")
    session.page.click("#send")
    assert "sly_data" in session.page.locator("#sly-in-error").inner_text()
    assert not session.chat_bodies()  # nothing was sent
    session.close("errors.png")


MARKDOWN_PAYLOADS = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=window.__pwned=1>",
    "[a](javascript:window.__pwned=1)",
    "[a](JaVaScRiPt:window.__pwned=1)",
    "[a](java\tscript:window.__pwned=1)",
    "[a](data:text/html,<script>window.__pwned=1</script>)",
    "[a](vbscript:msgbox)",
    "![a](https://tracker.example/pixel.png)",
    "<a href=\"javascript:window.__pwned=1\">a</a>",
    "<svg onload=window.__pwned=1>",
    "**<iframe src=javascript:window.__pwned=1>**",
    "`<b>code</b>` and ```\n<script>x</script>\n```",
    "[ok](https://example.com/a_(b)) and https://example.com/plain.",
    "[mail](mailto:someone@example.com)",
]

RENDER_ALL = """async (payloads) => {
  const { renderMarkdown } = await import('/playground/js/markdown.js');
  return payloads.map((text) => {
    const root = renderMarkdown(text);
    return {
      tags: [...root.querySelectorAll('*')].map((node) => node.tagName.toLowerCase()),
      hrefs: [...root.querySelectorAll('[href]')].map((node) => node.getAttribute('href')),
      attributes: [...root.querySelectorAll('*')].flatMap((node) => node.getAttributeNames()),
      text: root.textContent,
    };
  });
}"""


def test_markdown_renders_only_safe_elements_and_links(browser: Any, server: ServerProcess) -> None:
    session = Page(browser, server.http_base)
    session.page.goto(server.http_base + "/")
    results = session.page.evaluate(RENDER_ALL, MARKDOWN_PAYLOADS)
    allowed_tags = {"p", "strong", "em", "code", "pre", "a", "span", "ul", "ol", "li", "h1", "h2", "h3",
                    "h4", "h5", "h6", "blockquote", "hr"}
    allowed_attributes = {"href", "target", "rel", "class", "title"}
    for payload, result in zip(MARKDOWN_PAYLOADS, results, strict=True):
        assert set(result["tags"]) <= allowed_tags, (payload, result)
        assert set(result["attributes"]) <= allowed_attributes, (payload, result)
        assert all(href.startswith(("https://", "mailto:")) for href in result["hrefs"]), (payload, result)
    assert results[0]["text"] == MARKDOWN_PAYLOADS[0]  # raw HTML is shown as the text it is
    assert results[-2]["hrefs"] == ["https://example.com/a_(b)", "https://example.com/plain"]
    assert results[-1]["hrefs"] == ["mailto:someone@example.com"]
    assert session.page.evaluate("window.__pwned") is None and not session.dialogs
    session.assert_same_origin_only()  # the image was not fetched
    session.context.close()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "playground", "key": KEY, "agents": ["*"]}]}))
    with start_server(http=True, env={"AGENT_API_KEYS_FILE": str(keys)}) as running:
        yield running


def test_a_server_with_api_keys_asks_for_one_then_works(browser: Any, secured: ServerProcess) -> None:
    session = Page(browser, secured.http_base)
    page = session.page
    assert page.goto(secured.http_base + "/").status == 200  # the page itself is public
    page.locator("#key-panel").wait_for()
    assert "HTTP 401" in page.locator("#error").inner_text()
    page.fill("#api-key", KEY)
    page.click("#api-key-save")
    page.click("#agent-list button[data-agent='echo']")
    page.locator("svg.graph g.node[data-name='echoer']").wait_for()
    assert "hello" in session.send("hello").inner_text()
    chat = [r for r in session.requests if r.url.endswith("/streaming_chat")][-1]
    assert chat.headers["authorization"] == f"Bearer {KEY}"
    assert page.evaluate("sessionStorage.length") == 1 and page.evaluate("localStorage.length") == 0
    assert page.locator("#error").is_hidden()
    session.assert_same_origin_only()
    session.close("api_key.png")


GROWING = " ".join(f"Word{number:02d}" for number in range(1, 25)) + " — the end."


@pytest.fixture(scope="module")
def slow_writer() -> Iterator[tuple[StreamFake, ServerProcess]]:
    """A server whose every LLM call goes to the streaming fake, writing a word each 0.1 s."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    fake = StreamFake(pace=0.1, awkward=False)
    asyncio.run_coroutine_threadsafe(fake.__aenter__(), loop).result(10)
    try:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config("openai", max_attempts=1))}
        with start_server(env=env, http=True) as running:
            yield fake, running
    finally:
        asyncio.run_coroutine_threadsafe(fake.__aexit__(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_the_answer_grows_on_screen_before_it_is_complete(
    browser: Any, slow_writer: tuple[StreamFake, ServerProcess]
) -> None:
    fake, server = slow_writer
    fake.enqueue(Script(text=GROWING))
    session = Page(browser, server.http_base)
    page = session.page
    page.goto(server.http_base + "/#echo")
    page.locator("svg.graph g.node[data-name='echoer']").wait_for()
    page.fill("#user-input", "write slowly")
    page.click("#send")
    # Part of the answer is on screen while the turn is still pending: it grows.
    page.wait_for_function(
        """(full) => {
          const box = document.querySelector('.message.agent.pending .growing');
          const text = box ? box.textContent : '';
          return text.startsWith('Word01 ') && text.length < full.length;
        }""",
        arg=GROWING,
    )
    partial = page.locator(".message.agent.pending .growing").inner_text()
    assert GROWING.startswith(partial.strip()) and len(partial) < len(GROWING)
    assert fake.replies_finished == 0  # the model was still writing
    page.screenshot(path=str(ARTIFACTS / "answer_growing.png"), full_page=True)
    page.wait_for_function("() => !document.querySelector('.message.agent.pending')")
    assert page.locator(".message.agent").inner_text().strip() == GROWING
    assert page.locator("#timeline .step.delta").count() >= 1  # the echoer's writing, live in the timeline
    assert not session.errors
    session.close("answer_grown.png")
