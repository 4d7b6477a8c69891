"""Agent middleware: neuro-san's ``middleware`` key, implemented natively.

A network's LLM agent may list ``middleware`` entries (``{"class": …, "args": …}``) that
act around its model calls. neuro-san hands them to LangChain; this server implements the
classes neuro-san ships and documents, with the same configuration keys, and refuses any
other class when the network loads (never accepted and ignored).

- load-time validation of the entries (``parse_middleware``) is the network package's
  (:mod:`neuro_san.network.middleware_config`, through the load-time registry
  :mod:`neuro_san.network.middleware_registry`): the loader parses every key and imports
  nothing of this package; errors carry the file and key path.
- ``interface``: the ONE interface every implementation follows (``AgentMiddleware``).
- ``pii``, ``summarization``, ``tool_selection``, ``network_copy``: neuro-san's classes.
- ``registry``: settings type → instance (the run-time half of the registry); neuro-san's
  classes register here, applications built on the interface (``neuro_san.studio``) are
  registered by the composer.
- ``chain``: what the runtime calls (``middleware_chain``; ``rewritten_context``), its one
  door into this package.
"""
