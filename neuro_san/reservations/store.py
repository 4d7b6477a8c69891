"""The per-server store of temporary networks."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from copy import deepcopy
from dataclasses import dataclass, replace
from typing import Any

from neuro_san.network.spec import NetworkSource, NetworkSpec

#: The most temporary networks alive at once; reserving more fails instead of growing.
MAX_RESERVATIONS = 1000


@dataclass(frozen=True, slots=True)
class Reservation:
    reservation_id: str
    lifetime_in_seconds: float
    #: Seconds since the epoch when the network goes away.
    expiration_time_in_seconds: float

    def as_dict(self) -> dict[str, object]:
        return {
            "reservation_id": self.reservation_id,
            "lifetime_in_seconds": self.lifetime_in_seconds,
            "expiration_time_in_seconds": self.expiration_time_in_seconds,
        }


class ReservationError(Exception):
    pass


class ReservationStore:
    """Temporary copies of served networks, by reservation id, until they expire."""

    def __init__(self, source: NetworkSource, clock: Callable[[], float] = time.time) -> None:
        self._source = source
        self.clock = clock
        self._networks: dict[str, tuple[NetworkSpec, float]] = {}
        #: The network dicts deployed (``deploy(…, document)``), by reservation id: a client
        #: may ask for a temporary network's definition back (the Agent Network Designer).
        self._documents: dict[str, Mapping[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> NetworkSpec | None:
        entry = self._networks.get(name)
        if entry is None:
            return None
        if entry[1] <= self.clock():
            with self._lock:
                self._networks.pop(name, None)
                self._documents.pop(name, None)
            return None
        return entry[0]

    def document(self, name: str) -> dict[str, Any] | None:
        """A copy of the network dict the live reservation ``name`` was deployed from, or
        None (unknown, expired, or a copy of a served network, which has no dict)."""
        if self.get(name) is None:
            return None
        found = self._documents.get(name)
        return deepcopy(dict(found)) if found is not None else None

    def reserve(self, lifetime_in_seconds: float, prefix: str) -> Reservation:
        """A new id and expiry; nothing answers to it until :meth:`deploy`."""
        reservation_id = f"{prefix}-{uuid.uuid4()}" if prefix else str(uuid.uuid4())
        return Reservation(reservation_id, lifetime_in_seconds, self.clock() + lifetime_in_seconds)

    def deploy(self, reservation: Reservation, spec: NetworkSpec, document: Mapping[str, Any] | None = None) -> None:
        """Serve ``spec`` under the reservation's id until it expires; ``document``, the
        network dict it was built from, is kept for :meth:`document`."""
        now = self.clock()
        with self._lock:
            for name in [n for n, (_, at) in self._networks.items() if at <= now]:
                del self._networks[name]
                self._documents.pop(name, None)
            if len(self._networks) >= MAX_RESERVATIONS:
                raise ReservationError("too many temporary networks; try again later")
            self._networks[reservation.reservation_id] = (
                replace(spec, name=reservation.reservation_id, public=False),
                reservation.expiration_time_in_seconds,
            )
            if document is not None:
                self._documents[reservation.reservation_id] = deepcopy(dict(document))
            else:
                self._documents.pop(reservation.reservation_id, None)

    def copy(self, network_name: str, lifetime_in_seconds: float, prefix: str) -> Reservation:
        """Reserve a copy of the public served network ``network_name``. Raises
        :class:`ReservationError` for an unknown (or private) network or a full store."""
        original = self._source.get(network_name)
        if original is None or not original.public:
            raise ReservationError(f"no public network {network_name!r}")
        reservation = self.reserve(lifetime_in_seconds, prefix)
        # Not public: a temporary network is called by its id, never listed.
        self.deploy(reservation, original)
        return reservation
