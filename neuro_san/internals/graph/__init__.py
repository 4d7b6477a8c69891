"""neuro-san's agent-graph package path (compatibility surface; see ``neuro_san.internals``)."""
