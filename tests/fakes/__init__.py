"""Test doubles shared by every test suite (runtime, gateway, bench).

``fake_llm``: a local OpenAI- and Anthropic-compatible HTTP server (see its docstring).
"""
