"""neuro-san's ``Reservationist`` interface (same import path), as a coded tool with
``"allow": {"reservations": true}`` finds it in ``args["reservationist"]``::

    reservation = await reservationist.reserve(lifetime_in_seconds=300, prefix="mine")
    async with reservationist:
        event = await reservationist.deploy({reservation: agent_network_dict}, confirmation=True)
    await event.wait()

after which ``reservation.get_reservation_id()`` is an agent name this server answers to
until the reservation expires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from neuro_san.interfaces.reservation import Reservation


class Reservationist:
    DEFAULT_LIFETIME: float = 24 * 60 * 60

    async def reserve(self, lifetime_in_seconds: float = DEFAULT_LIFETIME, prefix: str = "") -> Reservation:
        raise NotImplementedError

    async def deploy(
        self, deployment_dict: Mapping[Reservation, Any], confirmation: bool = False
    ) -> asyncio.Event | None:
        """Make each reservation serve its agent network (a network file's contents as a dict)."""
        raise NotImplementedError

    async def deploy_one(
        self, reservation: Reservation, deployment: Any, confirmation: bool = False
    ) -> asyncio.Event | None:
        return await self.deploy({reservation: deployment}, confirmation=confirmation)

    async def __aenter__(self) -> Reservationist:
        return self

    async def __aexit__(self, *exc_info: object) -> bool:
        return False

    def validate_with(
        self, external_networks: list[str] | None = None, mcp_servers: list[str] | None = None
    ) -> Reservationist:
        return self

    async def close_of_work(self, parent_resource: Any = None) -> None:
        return None
