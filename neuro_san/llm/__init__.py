"""LLM models: the one interface the runtime calls, and the adapters behind it."""
