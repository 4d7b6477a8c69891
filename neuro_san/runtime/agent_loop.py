"""The loop of one LLM agent: ask the model, run the tools it asks for, repeat.

One invocation of an agent (the front man for the request, or a sub-agent called as a
tool) sends the model its instructions, any restored history and the input; while the
model asks for tools, the calls run concurrently and their results go back to it; its
first answer without tool calls is the agent's result. ``max_iterations`` bounds the
round trips.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from neuro_san.core.errors import LimitExceeded
from neuro_san.core.messages import MessageType, OriginPath, origin_str
from neuro_san.llm.interface import LlmMessage, Model, ModelResponse, ToolSpec, Usage
from neuro_san.llm.schema import tool_parameters_schema
from neuro_san.middleware.chain import middleware_chain
from neuro_san.network.spec import AgentSpec, is_external_ref
from neuro_san.runtime.context import RequestContext, usage_structure

_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class ToolBinding:
    """A tool as offered to the model, and what it refers to in the network."""

    spec: ToolSpec
    ref: str


def tool_function_name(ref: str) -> str:
    """A provider-safe function name for a tool reference.

    Local agent names are already safe. External references (``/deep/x``,
    ``http://host:8080/x``) become their path with ``/`` as ``__`` (``deep__x``)."""
    if not is_external_ref(ref):
        return ref
    path = ref.split("://", 1)[1].split("/", 1)[1] if "://" in ref else ref.lstrip("/")
    return _TOOL_NAME.sub("_", path.replace("/", "__"))[:64] or "external_agent"


@dataclass(frozen=True, slots=True)
class ToolSet:
    """An agent's tools as offered to the model: the specs, and each by function name."""

    specs: list[ToolSpec]
    by_name: Mapping[str, ToolBinding]


#: id(agent spec) → (agent spec, its network, its ToolSet), for agents without external
#: tools. Both specs are held so their ids cannot be reused; specs are never mutated (a
#: reload makes new ones), so a hit is exactly what bind_tools would compute again.
_TOOL_SETS: dict[int, tuple[AgentSpec, object, ToolSet]] = {}
_TOOL_SETS_SIZE = 4096


async def tool_set(ctx: RequestContext, agent: AgentSpec) -> ToolSet:
    """``bind_tools`` for ``agent``, computed once per agent spec when all its tools are
    local (tool schemas are the same on every invocation); external agents' functions are
    asked for each time, as they may change."""
    cached = _TOOL_SETS.get(id(agent))
    if cached is not None and cached[0] is agent and cached[1] is ctx.network:
        return cached[2]
    bindings = await bind_tools(ctx, agent)
    tools = ToolSet([b.spec for b in bindings], {b.spec.name: b for b in bindings})
    if not any(is_external_ref(ref) for ref in agent.tools):
        if len(_TOOL_SETS) >= _TOOL_SETS_SIZE:
            _TOOL_SETS.clear()
        _TOOL_SETS[id(agent)] = (agent, ctx.network, tools)
    return tools


async def bind_tools(ctx: RequestContext, agent: AgentSpec) -> list[ToolBinding]:
    bindings = []
    for ref in agent.tools:
        if is_external_ref(ref):
            function = await ctx.externals.function(ref)
        else:
            function = ctx.network.agents[ref].function
        description = str(function.get("description", "")) or f"Calls {ref}."
        params = function.get("parameters")
        schema = tool_parameters_schema(params if isinstance(params, Mapping) else None)
        if is_external_ref(ref) and not schema.get("properties"):
            # A network without declared parameters takes a free-text inquiry.
            schema = {
                "type": "object",
                "properties": {"inquiry": {"type": "string", "description": "What to ask."}},
                "required": ["inquiry"],
            }
        bindings.append(ToolBinding(ToolSpec(tool_function_name(ref), description, schema), ref))
    return bindings


async def run_llm_agent(
    ctx: RequestContext,
    agent: AgentSpec,
    origin: OriginPath,
    user_text: str,
    history: list[LlmMessage] | None = None,
    announce_instructions: bool = True,
) -> str:
    """Run one invocation of an LLM agent and return its answer."""
    with ctx.telemetry.span(f"agent {agent.name}", {"neuro_san.origin": origin_str(origin)}):
        return await _run_llm_agent(ctx, agent, origin, user_text, history, announce_instructions)


async def _run_llm_agent(
    ctx: RequestContext,
    agent: AgentSpec,
    origin: OriginPath,
    user_text: str,
    history: list[LlmMessage] | None,
    announce_instructions: bool,
) -> str:
    from neuro_san.runtime.tools import run_tool_calls  # tools call back into this module

    started = time.monotonic()
    model = ctx.models.create(agent.llm_config)
    model_key = f"{model.provider}:{model.model_name}"
    tools = await tool_set(ctx, agent)
    by_name, specs = tools.by_name, tools.specs

    messages: list[LlmMessage] = []
    if agent.instructions:
        messages.append(LlmMessage(role="system", content=agent.instructions))
        if announce_instructions:
            ctx.emit(MessageType.SYSTEM, origin, agent.instructions)
    messages.extend(history or ())
    messages.append(LlmMessage(role="user", content=user_text))
    ctx.emit(MessageType.HUMAN, origin, user_text)

    usage = Usage()
    requests = 0
    limit = agent.max_iterations or ctx.network.max_iterations
    middleware = middleware_chain(ctx, agent, origin)  # None for agents without any
    for _ in range(limit):
        if middleware is not None:
            stopped = await middleware.before_model(messages, specs)
            if stopped is not None:
                answer = stopped
                break
        response = await _ask_model(ctx, model, messages, middleware.tools if middleware else specs)
        if middleware is not None:
            response = await middleware.after_model(messages, response)
        usage = usage + response.usage
        requests += 1
        ctx.record_usage(model_key, response.usage)
        if not response.tool_calls:
            answer = response.text
            break
        messages.append(
            LlmMessage(role="assistant", content=response.text, tool_calls=response.tool_calls)
        )
        offered = middleware.offered(by_name) if middleware is not None else by_name
        results = await run_tool_calls(ctx, agent, origin, offered, response.tool_calls)
        for call, result in zip(response.tool_calls, results, strict=True):
            messages.append(LlmMessage(role="tool", content=result, tool_call_id=call.id, name=call.name))
    else:
        raise LimitExceeded(
            f"agent {agent.name!r} used all {limit} iterations (max_iterations) without answering"
        )

    if middleware is not None:
        answer = await middleware.after_agent(answer)
    ctx.emit(MessageType.AI, origin, answer)
    ctx.emit(
        MessageType.AGENT,
        origin,
        structure=usage_structure(usage, requests, time.monotonic() - started),
    )
    return answer


async def _ask_model(
    ctx: RequestContext, model: Model, messages: list[LlmMessage], specs: list[ToolSpec]
) -> ModelResponse:
    """One model call (retries included), reported to metrics and as an ``llm`` span."""
    telemetry = ctx.telemetry
    with telemetry.span(
        f"llm {model.provider} {model.model_name}",
        {"gen_ai.operation.name": "chat", "gen_ai.system": model.provider, "gen_ai.request.model": model.model_name},
    ) as span:
        call_started = time.monotonic()
        try:
            response: ModelResponse = await model.complete(messages, specs)
        except Exception:
            telemetry.llm_call(model.provider, model.model_name, time.monotonic() - call_started, 0, 0, False)
            raise
        prompt_tokens, completion_tokens = response.usage.prompt_tokens, response.usage.completion_tokens
        telemetry.llm_call(
            model.provider, model.model_name, time.monotonic() - call_started, prompt_tokens, completion_tokens, True
        )
        span.set_attribute("gen_ai.usage.input_tokens", prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", completion_tokens)
        return response




def describe_call(name: str, arguments: Mapping[str, object]) -> str:
    return f"Invoking: `{name}` with `{json.dumps(arguments, ensure_ascii=False, default=str)}`"
