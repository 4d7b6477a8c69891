"""neuro-san's ``Reservation`` interface (same import path): a temporary agent network's
handle, as returned by ``Reservationist.reserve``."""

from __future__ import annotations


class Reservation:
    """An id reserved for a while. The id is the agent name the network answers to."""

    def __init__(self, reservation_id: str, lifetime_in_seconds: float, expiration_time_in_seconds: float) -> None:
        self._id = reservation_id
        self._lifetime = lifetime_in_seconds
        self._expiration = expiration_time_in_seconds

    def get_reservation_id(self) -> str:
        return self._id

    def get_lifetime_in_seconds(self) -> float:
        return self._lifetime

    def get_expiration_time_in_seconds(self) -> float:
        """Seconds since the epoch when the network goes away."""
        return self._expiration

    def get_url(self) -> str | None:
        """neuro-san's hook for a network served elsewhere; always on this server here."""
        return None
