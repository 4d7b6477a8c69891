"""Provider errors reach clients by meaning, over both transports of a real server: the
gRPC code and the HTTP status a client sees for each class of provider failure, the
provider's message included and the API key never."""

from __future__ import annotations

import asyncio
import itertools
import time

import aiohttp
import grpc
import pytest

from tests.fakes.fake_llm import Reply
from tests.support import load
from tests.support.fake_thread import Rig

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

MAX_ATTEMPTS = 2
_texts = itertools.count()

#: provider reply, gRPC code, HTTP status, attempts made, a phrase of the client's message.
CASES = {
    "400": (Reply.error(400, "Invalid type for 'messages[1].content'"), "INTERNAL", 500, 1, "messages[1].content"),
    "422": (Reply.error(422, "Unprocessable: bad tool schema"), "INTERNAL", 500, 1, "bad tool schema"),
    "400-unsupported": (
        Reply.error(400, "Unsupported parameter: 'max_tokens' is not supported with this model."),
        "FAILED_PRECONDITION", 400, 1, "max_tokens",
    ),
    "401": (Reply.error(401, "Incorrect API key provided: test-openai-key"), "FAILED_PRECONDITION", 400, 1, "API key"),
    "403": (Reply.error(403, "Project does not have access"), "FAILED_PRECONDITION", 400, 1, "does not have access"),
    "404-model": (
        Reply.error(404, "The model `gpt-9` does not exist or you do not have access to it."),
        "FAILED_PRECONDITION", 400, 1, "gpt-9",
    ),
    "context-length": (
        Reply.error(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
        ),
        "RESOURCE_EXHAUSTED", 429, 1, "context window (128000 tokens",
    ),
    "408": (Reply.error(408, "request timeout"), "UNAVAILABLE", 503, MAX_ATTEMPTS, "408"),
    "429": (
        Reply.error(429, "Rate limit reached", headers={"Retry-After": "0"}), "UNAVAILABLE", 503, MAX_ATTEMPTS, "429"
    ),
    "500": (Reply.error(500, "server error"), "UNAVAILABLE", 503, MAX_ATTEMPTS, "500"),
    "503": (Reply.error(503, "overloaded"), "UNAVAILABLE", 503, MAX_ATTEMPTS, "503"),
    "connection": (Reply.drop(), "UNAVAILABLE", 503, MAX_ATTEMPTS, "connection"),
}  # fmt: skip


RIG_LLM_CONFIG = {"max_attempts": MAX_ATTEMPTS, "request_timeout": 5}  # for conftest's rig


async def _both(rig: Rig, text: str) -> list[load.ChatOutcome]:
    server = rig.server
    async with grpc.aio.insecure_channel(server.grpc_target) as channel, aiohttp.ClientSession() as session:
        return list(
            await asyncio.gather(
                load.grpc_chat(channel, "echo", text + "-grpc", timeout=30),
                load.http_chat(session, server.http_base, "echo", text + "-http", timeout=30),
            )
        )


@pytest.mark.parametrize("case", list(CASES))
def test_provider_error_codes(rig: Rig, case: str) -> None:
    reply, code, http_status, attempts, phrase = CASES[case]
    rig.fake.requests.clear()
    rig.fake.rule = load.fixed_rule(reply)
    text = f"{case}-{next(_texts)}-{time.monotonic_ns()}"
    try:
        outcomes = asyncio.run(_both(rig, text))
    finally:
        rig.fake.rule = None
    for outcome in outcomes:
        assert outcome.code == code, outcome
        assert phrase in outcome.message, outcome
        assert "test-openai-key" not in outcome.message
        if outcome.transport == "http":
            assert outcome.http_status == http_status, outcome
    assert load.requests_per_chat(rig.fake.requests) == {text + "-grpc": attempts, text + "-http": attempts}
