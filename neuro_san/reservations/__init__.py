"""Reservations: temporary agent networks that live for a while under a generated name.

neuro-san lets a middleware (``NetworkCopyMiddleware``) reserve a copy of a network for a
few minutes; the reservation id is then an agent name clients can call. The store here
keeps such copies with their expiry; the host looks names up in it after the registry.
"""
