"""A caller over its rate limit is refused before the stream starts: HTTP 429 with
``Retry-After`` and a Status body, as on REST (the service layer's limits, reached
through the facade like every front-end's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.gateway.agui.agui_client import post, run_input
from tests.support.servers import ServerProcess, start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def limited() -> Iterator[ServerProcess]:
    env = {"AGENT_RATE_LIMIT_CHATS": "1", "AGENT_RATE_LIMIT_PERIOD_SECONDS": "3600", "AGENT_RATE_LIMIT_BURST": "1"}
    with start_server(http=True, env=env) as running:
        yield running


def test_a_caller_over_its_limit_gets_429_with_retry_after(limited: ServerProcess) -> None:
    first = post(limited.http_base, "math_guy", run_input("What is 6 * 7?"))
    assert first.status == 200 and first.text == "The answer is 42."
    refused = post(limited.http_base, "math_guy", run_input("What is 6 * 7?"))
    assert refused.status == 429, (refused.status, refused.body)
    assert refused.headers.get("retry-after", "").isdigit()
    assert refused.body["code"] == 8 and refused.body["message"]
