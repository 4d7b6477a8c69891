"""``previous_response_id`` across three replicas: ``neuro-san serve`` ×3 behind Debian's
haproxy (round-robin, no stickiness) sharing one real ``redis-server`` (``AGENT_REDIS_URL``)
and one ``AGENT_CHAT_CONTEXT_KEY``, driven by OpenAI's Python SDK through the balancer.

Each turn continues the previous response; haproxy's ``X-Served-By`` shows the turns
landed on different replicas, and the LLM call of the last turn carries every earlier turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes.fake_llm import FakeLlmServer
from tests.support.cluster import SERVED_BY, Cluster, cluster, tools_missing
from tests.support.fake_thread import FakeInThread

pytestmark = [pytest.mark.slow, pytest.mark.skipif(tools_missing() is not None, reason=str(tools_missing()))]


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeLlmServer, Cluster]]:
    folder: Path = tmp_path_factory.mktemp("openai-cluster")
    with FakeInThread() as fake:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(max_attempts=1)),
               "AGENT_CHAT_CONTEXT_KEY": "a-shared-signing-key-of-32-chars!"}
        with cluster(folder, env) as running:
            yield fake, running


def test_previous_response_id_continues_on_any_replica(rig: tuple[FakeLlmServer, Cluster]) -> None:
    fake, running = rig
    served: list[str] = []

    def seen(response: Any) -> None:
        served.append(response.headers.get(SERVED_BY, ""))

    http = openai.DefaultHttpxClient(event_hooks={"response": [seen]})
    with openai.OpenAI(base_url=f"{running.http_base}/v1", api_key="unused", max_retries=0, http_client=http) as client:
        previous = client.responses.create(model="hello_world", input="turn 0").id
        for turn in range(1, 4):
            response = client.responses.create(model="hello_world", input=f"turn {turn}",
                                               previous_response_id=previous)
            assert response.status == "completed" and response.output_text
            previous = response.id
        kept = client.responses.retrieve(previous)  # on whichever replica this lands
        assert kept.id == previous
    assert len(set(served[:4])) > 1, served  # the turns were served by different replicas
    said = json.dumps(fake.requests[-1].body["messages"])
    assert all(f"turn {n}" in said for n in range(4))
