"""The ``Reservationist`` coded tools get (``allow.reservations``): reservations in the
server's :class:`ReservationStore`, networks built from the dicts they deploy."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from neuro_san.interfaces.reservation import Reservation
from neuro_san.interfaces.reservationist import Reservationist
from neuro_san.network.builder import build_network
from neuro_san.network.commondefs import apply_commondefs
from neuro_san.reservations.store import Reservation as StoredReservation
from neuro_san.reservations.store import ReservationStore


class StoreReservationist(Reservationist):
    def __init__(self, store: ReservationStore) -> None:
        self._store = store

    async def reserve(
        self, lifetime_in_seconds: float = Reservationist.DEFAULT_LIFETIME, prefix: str = ""
    ) -> Reservation:
        made = self._store.reserve(float(lifetime_in_seconds), prefix)
        return Reservation(made.reservation_id, made.lifetime_in_seconds, made.expiration_time_in_seconds)

    async def deploy(
        self, deployment_dict: Mapping[Reservation, Any], confirmation: bool = False
    ) -> asyncio.Event | None:
        """Validate every network first (a bad one raises ``NetworkLoadError`` with the
        key path, and nothing is deployed), then serve them all."""
        specs = []
        for reservation, document in deployment_dict.items():
            name = reservation.get_reservation_id()
            if not isinstance(document, dict):
                raise TypeError(f"the deployment for {name} must be an agent network dict")
            source = f"<reservation {name}>"
            spec = build_network(apply_commondefs(document, source), source, name, False)
            specs.append((reservation, spec, document))
        for reservation, spec, document in specs:
            stored = StoredReservation(
                reservation.get_reservation_id(),
                reservation.get_lifetime_in_seconds(),
                reservation.get_expiration_time_in_seconds(),
            )
            self._store.deploy(stored, spec, document)
        if not confirmation:
            return None
        done = asyncio.Event()
        done.set()
        return done
