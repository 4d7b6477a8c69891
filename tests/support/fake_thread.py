"""A FakeLlmServer on its own event loop in a thread, for tests whose server under test is
a separate process (so the test itself stays synchronous)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.fakes.fake_llm import FakeLlmServer
from tests.support.servers import ServerProcess, start_server


class FakeInThread:
    def __init__(self, **options: object) -> None:
        self.loop = asyncio.new_event_loop()
        self.fake = FakeLlmServer(**options)  # type: ignore[arg-type]
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> FakeLlmServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.fake.start(), self.loop).result(10)
        return self.fake

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


def override_env(fake: FakeLlmServer) -> dict[str, str]:
    """Environment that runs every network of a server on ``fake``."""
    return {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config())}


@dataclass
class Rig:
    """A real server whose networks all talk to a fake LLM running in this process."""

    fake: FakeLlmServer
    server: ServerProcess

    def __iter__(self) -> Iterator[Any]:
        """``fake, server = rig``."""
        return iter((self.fake, self.server))


@contextmanager
def fake_backed_server(http: bool = True, **llm_config: Any) -> Iterator[Rig]:
    """Start a fake LLM and a server pointed at it (``llm_config`` extras such as
    ``max_attempts`` go into the override); fail if the server died meanwhile."""
    with FakeInThread() as fake:
        env = {"AGENT_LLM_OVERRIDE": json.dumps(fake.llm_config(**llm_config))}
        with start_server(env=env, http=http) as server:
            yield Rig(fake, server)
            assert server.process.poll() is None, f"the server died:\n{server.log()}"
