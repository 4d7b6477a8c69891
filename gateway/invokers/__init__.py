"""How the HTTP port reaches the service: the :class:`~gateway.invokers.interface.Invoker` seam.

:mod:`~gateway.invokers.channel` calls over one shared gRPC channel (the standalone
gateway); :mod:`~gateway.invokers.inprocess` (with :mod:`~gateway.invokers.local_call`)
calls the service layer's own handlers inside ``neuro-san serve``, with no socket.
"""
