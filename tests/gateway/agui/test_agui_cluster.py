"""AG-UI's ``threadId`` behind a round-robin balancer: three ``neuro-san serve`` replicas
sharing one real ``redis-server`` (``AGENT_REDIS_URL``), Debian's haproxy in front without
stickiness. Each run of one thread lands on another replica (haproxy's ``X-Served-By``)
and still continues the conversation, which lives in Redis. The bundled math_guy runs on
the offline scripted model, which repeats the earlier question when asked for it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.gateway.agui.agui_client import check_order, post, run_input
from tests.support.cluster import SERVED_BY, Cluster, cluster, tools_missing

pytestmark = [pytest.mark.slow, pytest.mark.skipif(tools_missing() is not None, reason=str(tools_missing()))]


@pytest.fixture(scope="module")
def balanced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("agui-cluster"), {}) as running:
        yield running


def test_a_thread_continues_on_every_replica(balanced: Cluster) -> None:
    thread = uuid.uuid4().hex
    served_by: list[str] = []
    said: list[str] = []
    for question in ("What is 6 * 7?", "what did i ask?", "what did i say?"):
        reply = post(balanced.http_base, "math_guy", run_input(question, thread))
        assert reply.status == 200, reply.body
        check_order(reply.events)
        served_by.append(reply.headers[SERVED_BY.lower()])
        said.append(reply.text)
    assert len(set(served_by)) == 3, served_by  # round-robin: each run on another replica
    assert said == ["The answer is 42.", "You asked: What is 6 * 7?", "You asked: what did i ask?"]
    # Another thread on the same replicas knows nothing of it.
    other = post(balanced.http_base, "math_guy", run_input("what did i ask?"))
    assert other.text != said[1]
