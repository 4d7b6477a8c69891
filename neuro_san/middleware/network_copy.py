"""``NetworkCopyMiddleware``: reserve a temporary copy of the network the agent names.

After the agent's final answer, the answer is read as JSON ``{"agent_name": …}``; that
served, public network is copied for 5 minutes under ``copy_cat-<name>-<uuid>``, the
reservation goes into ``sly_data["agent_reservations"]``, and the answer becomes
``The temporary agent name is <id>. Hurry, it's only available for <n> seconds.``
The agent's own answer is journaled as an AGENT message first.

Deviation: neuro-san copies ``<name>.hocon`` from its bundled registries folder, served or
not; this server copies what it serves (public networks only), so a copy never exposes a
network a client could not call anyway.
"""

from __future__ import annotations

import json

from neuro_san.core.messages import MessageType
from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.reservations.store import ReservationError

LIFETIME_SECONDS = 5 * 60.0


def _agent_name(answer: str) -> str | None:
    try:
        parsed = json.loads(answer)
    except (json.JSONDecodeError, TypeError):
        return None
    name = parsed.get("agent_name") if isinstance(parsed, dict) else None
    if not isinstance(name, str) or not name:
        return None
    return name.removesuffix(".hocon")


class NetworkCopyMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation) -> None:
        super().__init__(invocation)

    async def after_agent(self, answer: str) -> str:
        ctx, origin = self.invocation.ctx, self.invocation.origin
        ctx.emit(MessageType.AGENT, origin, answer)
        name = _agent_name(answer)
        if name is None:
            return "Please provide the name of the network to copy."
        store = ctx.reservations
        if store is None:
            return "Got the following error: this server keeps no reservations."
        try:
            reservation = store.copy(name, LIFETIME_SECONDS, prefix=f"copy_cat-{name}")
        except ReservationError:
            return f"Cannot find agent {name}. Please provide a valid name of the network to copy."
        ctx.sly_data["agent_reservations"] = [reservation.as_dict()]
        return (
            f"The temporary agent name is {reservation.reservation_id}. "
            f"Hurry, it's only available for {reservation.lifetime_in_seconds} seconds."
        )
