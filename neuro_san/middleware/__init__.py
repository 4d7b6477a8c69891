"""Agent middleware: neuro-san's ``middleware`` key, implemented natively.

A network's LLM agent may list ``middleware`` entries (``{"class": …, "args": …}``) that
act around its model calls. neuro-san hands them to LangChain; this server implements the
classes neuro-san ships and documents, with the same configuration keys, and refuses any
other class when the network loads (never accepted and ignored).

- ``config``: load-time validation of the entries (``parse_middleware``), used by the
  network builder; errors carry the file and key path.
- ``interface``: the ONE interface every implementation follows (``AgentMiddleware``).
- ``pii``, ``summarization``: the implementations.
- ``chain``: what the agent loop calls (``middleware_chain``).
"""
