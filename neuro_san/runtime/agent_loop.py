"""The loop of one LLM agent: ask the model, run the tools it asks for, repeat.

One invocation of an agent (the front man for the request, or a sub-agent called as a
tool) sends the model its instructions, any restored history and the input; while the
model asks for tools, the calls run concurrently and their results go back to it; its
first answer without tool calls is the agent's result. ``max_iterations`` bounds the
round trips.
"""

from __future__ import annotations

import logging
import time

from neuro_san.core.errors import LimitExceeded
from neuro_san.core.messages import TRUNCATION_CAVEAT, MessageType, OriginPath, origin_str
from neuro_san.llm.interface import DeltaSink, LlmMessage, Model, ModelResponse, ToolSpec
from neuro_san.middleware.chain import middleware_chain
from neuro_san.network.spec import AgentSpec
from neuro_san.runtime.context import RequestContext
from neuro_san.runtime.error_format import format_error
from neuro_san.runtime.tools import run_tool_calls
from neuro_san.runtime.transcript import note_tool_result
from neuro_san.runtime.usage_report import add_caveat, agent_usage, record_llm_call

log = logging.getLogger(__name__)


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
        with agent_usage(len(origin)) as usage_scope:
            answer = await _run_llm_agent(ctx, agent, origin, user_text, history, announce_instructions)
        report = usage_scope.report() if ctx.journal.agent_usage else None
        if report is not None:
            ctx.emit(MessageType.AGENT, origin, structure=report)
        return answer


async def _run_llm_agent(
    ctx: RequestContext,
    agent: AgentSpec,
    origin: OriginPath,
    user_text: str,
    history: list[LlmMessage] | None,
    announce_instructions: bool,
) -> str:
    model = ctx.models.create(agent.llm_config, ctx.llm_keys)
    model_key = f"{model.provider}:{model.model_name}"
    tools = await ctx.tools.tool_set(ctx, agent, origin)
    by_name, specs = tools.by_name, tools.specs
    middleware = middleware_chain(ctx, agent, origin)  # None for agents without any
    if middleware is not None:
        added = [tool for tool in middleware.extra_tools() if tool.spec.name not in by_name]
        if added:
            by_name = {**by_name, **{tool.spec.name: tool for tool in added}}
            specs = [*specs, *(tool.spec for tool in added)]

    messages: list[LlmMessage] = []
    if agent.instructions:
        messages.append(LlmMessage(role="system", content=agent.instructions))
        if announce_instructions:
            ctx.emit(MessageType.SYSTEM, origin, agent.instructions)
    messages.extend(history or ())
    messages.append(LlmMessage(role="user", content=user_text))
    ctx.emit(MessageType.HUMAN, origin, user_text)

    truncated = False
    limit = agent.max_iterations or ctx.network.max_iterations
    # Token deltas, when the request wants this agent's; never for an agent with
    # middleware, which may rewrite the model's text (PII redaction) after the fact.
    deltas = ctx.journal.delta_sink(origin) if middleware is None else None
    for _ in range(limit):
        if middleware is not None:
            stopped = await middleware.before_model(messages, specs)
            if stopped is not None:
                answer = stopped
                break
        call_started = time.monotonic()
        response = await _ask_model(ctx, model, messages, middleware.tools if middleware else specs, deltas)
        if middleware is not None:
            response = await middleware.after_model(messages, response)
        ctx.record_usage(model_key, response.usage)
        record_llm_call(model.provider, model.model_name, response, time.monotonic() - call_started)
        if not response.tool_calls:
            back = await middleware.review(response.text) if middleware is not None else None
            if back is None:
                answer = response.text
                truncated = response.truncated
                break
            # A middleware's after-agent check failed: the model goes on with its answer
            # and the problems, within the same iteration budget.
            messages.append(LlmMessage(role="assistant", content=response.text, reasoning=response.reasoning))
            messages.append(LlmMessage(role="user", content=back))
            continue
        messages.append(
            LlmMessage(
                role="assistant", content=response.text, tool_calls=response.tool_calls, reasoning=response.reasoning
            )
        )
        offered = middleware.offered(by_name) if middleware is not None else by_name
        results = await run_tool_calls(ctx, agent, origin, offered, response.tool_calls)
        for call, result in zip(response.tool_calls, results, strict=True):
            messages.append(LlmMessage(role="tool", content=result, tool_call_id=call.id, name=call.name))
            note_tool_result(origin, result)
    else:
        raise LimitExceeded(
            f"agent {agent.name!r} used all {limit} iterations (max_iterations) without answering"
        )

    if truncated:
        log.warning("agent %r: model %s stopped at its output token limit; answer cut off", agent.name, model_key)
        answer = f"{answer}\n\n{TRUNCATION_CAVEAT}" if answer else TRUNCATION_CAVEAT
        # In this agent's token accounting and in every report above it (their answers
        # were built on the cut-off one), the request totals included.
        add_caveat("truncated: the answer was cut off at the model's output token limit")
    if middleware is not None:
        answer = await middleware.after_agent(answer)
    answer = format_error(agent, origin, answer)
    ctx.emit(MessageType.AI, origin, answer)
    return answer


async def _ask_model(
    ctx: RequestContext,
    model: Model,
    messages: list[LlmMessage],
    specs: list[ToolSpec],
    deltas: DeltaSink | None = None,
) -> ModelResponse:
    """One model call (retries included), reported to metrics and as an ``llm`` span;
    streamed to ``deltas`` when given."""
    telemetry = ctx.telemetry
    with telemetry.span(
        f"llm {model.provider} {model.model_name}",
        {"gen_ai.operation.name": "chat", "gen_ai.system": model.provider, "gen_ai.request.model": model.model_name},
    ) as span:
        call_started = time.monotonic()
        try:
            # Without a sink the call is today's, word for word (a Model written before
            # streaming need not know the keyword).
            response: ModelResponse = (
                await model.complete(messages, specs)
                if deltas is None
                else await model.complete(messages, specs, on_delta=deltas)
            )
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
