"""The host: everything every front-end on the HTTP port shares.

The aiohttp application and its one route table (:mod:`~gateway.host.app`), start and
stop (:mod:`~gateway.host.server`), TLS, the connection guard (slow and flooding clients),
the one guarded way a request body is read (:mod:`~gateway.host.body`), health, metrics,
error bodies, header ⇄ metadata mapping, path templates and the mux, and the seam every
front-end mounts through (:mod:`~gateway.host.frontends`). The host imports no front-end:
the composition root (:mod:`gateway.composition`) hands it their factories.
"""
