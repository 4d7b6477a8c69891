"""A2A (Agent2Agent protocol) front-end: every public network as an A2A agent.

Mounted on the HTTP port through :mod:`gateway.frontends`; see :mod:`a2a_frontend.frontend`.
"""

from a2a_frontend.frontend import A2AFrontEnd, make_a2a_frontend

__all__ = ["A2AFrontEnd", "make_a2a_frontend"]
