"""What Connectivity reports of one node, as neuro-san 0.7's ``ConnectivityReporter``.

A node's tools are its ``tools`` strings followed by the agent names of its
``args.tools`` (the convention coded tools use to name the agents they call: a list, or
a dict whose values are the names), each once, in that order; dict entries (MCP servers)
are left out. An ``args.tools`` name that is no agent of the network is listed but gets
no node of its own, as in neuro-san.

A URL among the tools gets an ``external_agent`` node only when neuro-san can read an
agent name from its path: ``https://mcp.example.com`` (no path) is listed by its parent
and has no node.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from neuro_san.network.spec import AgentSpec


def connectivity_tools(agent: AgentSpec) -> tuple[str, ...]:
    """The tool names Connectivity lists for ``agent``."""
    listed = list(agent.tools)
    args_tools = agent.args.get("tools")
    if isinstance(args_tools, dict):
        listed.extend(str(value) for value in args_tools.values() if isinstance(value, str))
    elif isinstance(args_tools, list | tuple):
        listed.extend(item for item in args_tools if isinstance(item, str))
    return tuple(dict.fromkeys(listed))


def reported_as_agent(reference: str) -> bool:
    """True when an external reference gets a Connectivity node of its own."""
    if reference.startswith("/"):
        return len(reference) > 1
    try:
        path = urlsplit(reference).path
    except ValueError:
        return False
    return len(path) > 1 and path.startswith("/")
