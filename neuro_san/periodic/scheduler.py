"""Running periodic interactions inside the server.

One task per server: it asks for the current interactions on every wake-up (so a hot
reload of the manifest takes effect, which neuro-san 0.7.15 does not do), fires each due
interaction as an in-process MINIMAL chat with its text, its sly_data (at the top of the
request: neuro-san 0.7.15 drops it) and its metadata, and discards the answer. A failing
interaction is logged, by error type only, and the schedule goes on.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from neuro_san.core.agent_api import AgentApi
from neuro_san.core.messages import ChatFilter, ChatRequest
from neuro_san.periodic.config import Interaction

log = logging.getLogger(__name__)

#: The longest sleep, so that manifest reloads are noticed.
MAX_SLEEP_SECONDS = 30.0

InteractionSource = Callable[[], Mapping[str, tuple[Interaction, ...]]]


async def run_interaction(agents: AgentApi, network: str, interaction: Interaction) -> None:
    request = ChatRequest(
        user_text=interaction.text,
        sly_data=copy.deepcopy(dict(interaction.sly_data)),
        chat_filter=ChatFilter.MINIMAL,
        metadata=dict(interaction.metadata),
    )
    try:
        async for _ in agents.chat(network, request):
            pass
    except asyncio.CancelledError:
        raise
    except Exception as error:  # one failing interaction must not stop the schedule
        log.warning("periodic interaction of %s failed: %s", network, type(error).__name__)
        return
    log.info("periodic interaction of %s done (%s)", network, interaction.cron_schedule)


async def run_periodic(
    interactions: InteractionSource,
    agents: AgentApi,
    now: Callable[[], datetime] = lambda: datetime.now().astimezone(),
) -> None:
    """Fire every interaction on its schedule until cancelled (which cancels the chats
    still running)."""
    scheduled: dict[tuple[str, int], tuple[Interaction, datetime]] = {}
    running: set[asyncio.Task[None]] = set()
    try:
        while True:
            moment = now()
            current = {(name, i): it for name, its in interactions().items() for i, it in enumerate(its)}
            for key in [k for k in scheduled if k not in current or scheduled[k][0] is not current[k]]:
                del scheduled[key]
            for key, interaction in current.items():
                if key not in scheduled:
                    scheduled[key] = (interaction, interaction.schedule.next_after(moment))
            for key, (interaction, at) in list(scheduled.items()):
                if at <= moment:
                    scheduled[key] = (interaction, interaction.schedule.next_after(moment))
                    task = asyncio.create_task(run_interaction(agents, key[0], interaction))
                    running.add(task)
                    task.add_done_callback(running.discard)
            wake = min((at for _, at in scheduled.values()), default=moment + timedelta(seconds=MAX_SLEEP_SECONDS))
            await asyncio.sleep(min(max((wake - moment).total_seconds(), 0.01), MAX_SLEEP_SECONDS))
    finally:
        for task in running:
            task.cancel()
