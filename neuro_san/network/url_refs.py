"""Load-time checks of the URL references in an agent's ``tools`` list.

A ``scheme://…`` string is an MCP server (:func:`neuro_san.network.mcp_refs.is_mcp_url`)
or another neuro-san server's agent (``grpc(s)://host:port/name``,
``http(s)://host:port/name``, read by ``neuro_san.client.remote``). A malformed one would
only fail when an LLM first calls it; here it is refused when the network loads.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from neuro_san.network.mcp_refs import is_mcp_url, mcp_url_problem

#: The schemes of another server's agents (``neuro_san.client.remote.SCHEMES``).
AGENT_SCHEMES = ("grpc", "grpcs", "http", "https")


def url_ref_problem(ref: str) -> str | None:
    """Why the ``tools`` string ``ref`` (it holds ``://``, it is not ``a2a+``) cannot be
    reached, or None."""
    if is_mcp_url(ref):
        return mcp_url_problem(ref)
    try:
        parts = urlsplit(ref)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as error:
        return f"{ref!r} is not a valid URL: {error}"
    if parts.scheme.lower() not in AGENT_SCHEMES:
        return (
            f"{ref!r}: unknown scheme {parts.scheme!r}; another server's agent is "
            "grpc(s)://host:port/name or http(s)://host:port/name, an A2A agent a2a+https://…"
        )
    if not parts.hostname:
        return f"{ref!r} has no host"
    if not parts.path.strip("/"):
        return f"{ref!r} names no agent: add it as the path (…/agent_name)"
    return None
