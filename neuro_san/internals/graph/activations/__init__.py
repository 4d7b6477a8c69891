"""neuro-san's activations package path (compatibility surface; see ``neuro_san.internals``)."""
