"""Running one tool call, whatever its kind (see ``tool_interface.Tool``).

Whatever the kind, the caller journals ``AGENT "Invoking …"`` before and
``AGENT_TOOL_RESULT`` after, and the model gets the result as text. A tool that fails
(a coded tool raising, bad arguments, an unknown tool name) gives the model an
``Error: …`` result rather than failing the request; failures of the run itself
(LLM errors, limits, cancellation) propagate.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from neuro_san.core.messages import MessageType, OriginPath, origin_str
from neuro_san.llm.interface import ToolCall
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.arguments import convert_arguments
from neuro_san.runtime.context import RequestContext
from neuro_san.runtime.tool_interface import Tool, build_agent_input

__all__ = ["build_agent_input", "call_tool", "describe_call", "run_tool_calls"]

log = logging.getLogger(__name__)


def describe_call(name: str) -> str:
    """The "Invoking" AGENT text, as neuro-san 0.7 words it. It names the tool only: the
    arguments go in the message's structure (``params``), not in the text."""
    return f"Invoking: `{name}` with:"


async def call_tool(
    ctx: RequestContext,
    caller: AgentSpec,
    caller_origin: OriginPath,
    bindings: Mapping[str, Tool],
    call: ToolCall,
) -> str:
    binding = bindings.get(call.name)
    if binding is None:
        known = ", ".join(sorted(bindings)) or "none"
        return f"Error: there is no tool named {call.name!r}; the tools are: {known}"
    if call.arguments_error:
        return f"Error: the arguments for {call.name!r} were not a JSON object: {call.arguments_error}"

    arguments = dict(call.arguments)
    ctx.emit(
        MessageType.AGENT,
        caller_origin,
        describe_call(binding.ref),
        structure={"invoking_start": True, "invoked_agent_name": binding.ref, "params": arguments},
    )
    arguments = convert_arguments(arguments, binding.spec.parameters)
    ref = binding.ref
    if log.isEnabledFor(logging.DEBUG):  # the origin string is built only when it is logged
        origin = origin_str(caller_origin)
        log.debug("calling tool %s from %s", ref, origin, extra={"origin": origin, "tool": ref})
    kind = binding.kind
    callee_origin = ctx.instantiate(caller_origin, ref)
    with ctx.telemetry.span(
        f"tool {_span_name(ref)}",
        {"neuro_san.tool.kind": kind, "neuro_san.origin": origin_str(callee_origin)},
        kind="client" if binding.remote else "internal",
    ) as span:
        result = await binding.call(ctx, caller, callee_origin, arguments)
        failed = result.startswith("Error:")
        span.set_attribute("neuro_san.tool.error", failed)
    ctx.telemetry.tool_call(kind, ok=not failed)
    ctx.emit(MessageType.AGENT_TOOL_RESULT, caller_origin, result, tool_result_origin=callee_origin)
    return result


def _span_name(ref: str) -> str:
    """The tool reference without any ``user:password@`` a URL may carry."""
    scheme, separator, rest = ref.partition("://")
    if not separator or "@" not in rest.split("/", 1)[0]:
        return ref
    return f"{scheme}://{rest.split('@', 1)[1]}"


async def run_tool_calls(
    ctx: RequestContext,
    caller: AgentSpec,
    caller_origin: OriginPath,
    bindings: Mapping[str, Tool],
    calls: Sequence[ToolCall],
) -> list[str]:
    """The results of one model turn's tool calls, in order. Several calls run
    concurrently; the TaskGroup cancels the siblings when the request is cancelled."""
    if len(calls) == 1:
        return [await call_tool(ctx, caller, caller_origin, bindings, calls[0])]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(call_tool(ctx, caller, caller_origin, bindings, call)) for call in calls]
    return [task.result() for task in tasks]
