"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, npm) against our
``/mcp`` on a real server on loopback.

Every scenario of the suite's active set runs. Those that call the suite's own fixture tools,
prompts and resources (``test_simple_text``, ``test://static-text`` …) or capabilities we do
not declare cannot pass against a server that hosts agent networks: they are listed in
``NOT_APPLICABLE`` with the reason, and each must fail for exactly that reason (the error the
suite saw is checked), so the list cannot hide a real failure. Every other scenario passes.

The suite is pinned to 0.1.13, the newest release that runs on Node 20 (0.1.14+ import
``fs.globSync``, Node 22): ``make mcp-conformance`` installs it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.servers import ROOT, start_server

pytestmark = pytest.mark.slow

SUITE = ROOT / ".tools" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

_FIXTURE_TOOL = "the suite's own fixture tool (we serve agent networks, not the suite's tools)"
_FIXTURE_PROMPT = "the suite's own fixture prompt"
_FIXTURE_RESOURCE = "the suite's own fixture resource"

#: scenario -> (why it cannot pass here, a fragment of the error it must fail with)
NOT_APPLICABLE: dict[str, tuple[str, str]] = {
    "logging-set-level": ("we do not declare the `logging` capability", "Method not found: logging/setLevel"),
    "tools-call-with-logging": ("needs `logging`, which we do not declare", "Method not found: logging/setLevel"),
    "completion-complete": ("we do not declare the `completions` capability", "Method not found: completion/complete"),
    "resources-subscribe": ("we declare resources.subscribe: false", "Method not found: resources/subscribe"),
    "resources-unsubscribe": ("we declare resources.subscribe: false", "Method not found: resources/subscribe"),
    "resources-read-text": (_FIXTURE_RESOURCE, "Resource not found: test://static-text"),
    "resources-read-binary": (_FIXTURE_RESOURCE, "Resource not found: test://static-binary"),
    "resources-templates-read": (_FIXTURE_RESOURCE, "Resource not found: test://template/"),
    "prompts-get-simple": (_FIXTURE_PROMPT, "Unknown prompt: test_simple_prompt"),
    "prompts-get-with-args": (_FIXTURE_PROMPT, "Unknown prompt: test_prompt_with_arguments"),
    "prompts-get-embedded-resource": (_FIXTURE_PROMPT, "Unknown prompt: test_prompt_with_embedded_resource"),
    "prompts-get-with-image": (_FIXTURE_PROMPT, "Unknown prompt: test_prompt_with_image"),
    "tools-call-simple-text": (_FIXTURE_TOOL, "Unknown tool: test_simple_text"),
    "tools-call-image": (_FIXTURE_TOOL, "Unknown tool: test_image_content"),
    "tools-call-audio": (_FIXTURE_TOOL, "Unknown tool: test_audio_content"),
    "tools-call-embedded-resource": (_FIXTURE_TOOL, "Unknown tool: test_embedded_resource"),
    "tools-call-mixed-content": (_FIXTURE_TOOL, "Unknown tool: test_multiple_content_types"),
    "tools-call-error": (_FIXTURE_TOOL, "Unknown tool: test_error_handling"),
    "tools-call-with-progress": (_FIXTURE_TOOL, "Unknown tool: test_tool_with_progress"),
    "tools-call-sampling": (_FIXTURE_TOOL, "Unknown tool: test_sampling"),
    "tools-call-elicitation": (_FIXTURE_TOOL, "Unknown tool: test_elicitation"),
    "elicitation-sep1034-defaults": (_FIXTURE_TOOL, "Unknown tool: test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": (_FIXTURE_TOOL, "Unknown tool: test_elicitation_sep1330_enums"),
}

_PASSING = {"SUCCESS", "INFO"}


def _unavailable() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed: the MCP conformance suite runs on it"
    if not SUITE.exists():
        return "the MCP conformance suite is not installed: run `make mcp-conformance` (npm)"
    return None


def _results(out: Path) -> dict[str, list[dict[str, object]]]:
    """scenario -> its checks, from the suite's ``-o`` directory (``server-<scenario>-<time>/``)."""
    found: dict[str, list[dict[str, object]]] = {}
    for checks in sorted(out.glob("*/checks.json")):
        match = re.fullmatch(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z", checks.parent.name)
        assert match, f"unexpected result directory {checks.parent.name}"
        found[match.group(1)] = json.loads(checks.read_text())
    return found


@pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))
def test_official_mcp_conformance_suite(tmp_path: Path) -> None:
    with start_server(http=True) as server:
        url = f"http://127.0.0.1:{server.http_port}/mcp"
        run = subprocess.run(
            ["node", str(SUITE), "server", "--url", url, "-o", str(tmp_path)],
            capture_output=True, text=True, timeout=240,
        )
    results = _results(tmp_path)
    assert len(results) >= 25, f"the suite ran too few scenarios:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    problems: list[str] = []
    for scenario, checks in sorted(results.items()):
        failures = [check for check in checks if check.get("status") not in _PASSING]
        if scenario in NOT_APPLICABLE:
            reason, expected = NOT_APPLICABLE[scenario]
            errors = " | ".join(str(check.get("errorMessage", "")) for check in failures)
            if expected not in errors:
                problems.append(f"{scenario} is listed as not applicable ({reason}) but did not fail "
                                f"with {expected!r}: {errors or 'it passed; take it off the list'}")
        elif failures:
            problems.append(f"{scenario}: " + " | ".join(str(check.get("errorMessage")) for check in failures))
    assert not problems, "\n".join(problems)
