"""The coded-tool interface, unchanged from neuro-san so that existing tools run as-is.

A coded tool is a class with a no-argument constructor, named by an agent's ``class``
key (``module.Class``, looked up under ``AGENT_TOOL_PATH/<network>/`` and then
``AGENT_TOOL_PATH/``). Implement :meth:`CodedTool.async_invoke` (preferred); a tool
that only implements the synchronous :meth:`CodedTool.invoke` runs in a worker thread,
so it never blocks the server's event loop.

``args`` holds the arguments the LLM chose (per the agent's ``function.parameters``),
the agent's ``args`` from the network file, and keys the framework adds:

- ``origin``: the path to this tool, a list of ``{"tool", "instantiation_index"}``;
- ``origin_str``: that path in dotted form (``front.calculator``);
- ``progress_reporter``: an ``AgentProgressReporter`` whose reports stream to the
  client as AGENT_PROGRESS messages.

``sly_data`` is the request's private dict: the tool may read it and write to it; it is
never shown to an LLM. The return value becomes the tool's result (``str()`` of it).
An exception becomes the result ``"Error: <message>"`` and the model carries on.
"""

from __future__ import annotations

from typing import Any


class CodedTool:
    """Base class of coded tools. Override one of the two methods."""

    def invoke(self, args: dict[str, Any], sly_data: dict[str, Any]) -> Any:
        """Synchronous entry point; runs in a worker thread."""
        raise NotImplementedError

    async def async_invoke(self, args: dict[str, Any], sly_data: dict[str, Any]) -> Any:
        """Asynchronous entry point, called on the event loop: do not block in it."""
        raise NotImplementedError
