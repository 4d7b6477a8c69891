"""The REST transcoder: HTTP/JSON routes generated from the protos' ``google.api.http`` rules.

Laid out like grpc-gateway's ``runtime/``: :mod:`~gateway.transcoder.routes` (rules from
descriptors), :mod:`~gateway.transcoder.binder` (body → path → query),
:mod:`~gateway.transcoder.marshal` (JSON ⇄ proto), :mod:`~gateway.transcoder.forward`
(unary, NDJSON, SSE), :mod:`~gateway.transcoder.openapi`, and
:mod:`~gateway.transcoder.frontend`, which mounts the routes on the host like any other
front-end. It knows only descriptors and an invoker.
"""
