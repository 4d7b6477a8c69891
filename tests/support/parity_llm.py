"""A scripted fake-LLM rule that behaves the same whoever asks: neuro-san 0.7.15 or us.

An agent's instructions may carry one line ``PLAN: [[call, …], …]`` (JSON): each inner
list is one model turn's tool calls (``{"name": …, "args": {…}}``, run in parallel when
there are several). The rule counts the tool-calling turns since the last user message
and asks for the next planned turn; when the plan is used up (or there is none) it
answers ``ANSWER(<the last user text or tool results>)``. A planned name matches the
offered function whose name is that name or ends with ``_`` + it, so ``parity_echo``
finds an external network whether it is offered as ``parity_echo`` or ``__parity_echo``.

Run as a process for the parity test and for manual comparisons::

    python -m tests.support.parity_llm --port 0   # prints "READY <openai base>"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from typing import Any

from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, RecordedRequest, Reply
from tests.fakes.llm_wire import text_of

PLAN_MARK = "PLAN:"


def _plan(messages: list[Any]) -> list[list[dict[str, Any]]]:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "system":
            for line in text_of(message.get("content")).splitlines():
                if line.startswith(PLAN_MARK):
                    plan = json.loads(line[len(PLAN_MARK) :])
                    return plan if isinstance(plan, list) else []
    return []


def _since_last_user(messages: list[Any]) -> list[dict[str, Any]]:
    tail: list[dict[str, Any]] = []
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            break
        tail.append(message)
    return list(reversed(tail))


def _offered(request: RecordedRequest, name: str) -> str:
    tools = request.body.get("tools") if isinstance(request.body, dict) else None
    for tool in tools or ():
        offered = str(tool.get("function", {}).get("name", ""))
        if offered == name or offered.endswith("_" + name):
            return offered
    return name


def planned_reply(request: RecordedRequest) -> Reply:
    """The reply for ``request`` following its agent's PLAN (see the module docstring)."""
    messages = request.messages
    tail = _since_last_user(messages)
    turns_done = sum(1 for m in tail if m.get("role") == "assistant" and m.get("tool_calls"))
    plan = _plan(messages)
    if turns_done < len(plan):
        calls = [FakeToolCall(_offered(request, c["name"]), c.get("args", {})) for c in plan[turns_done]]
        return Reply.calls(*calls)
    results = [text_of(m.get("content")) for m in tail if m.get("role") == "tool"]
    said = " | ".join(results) if results else request.last_input_text()
    return Reply.answer(f"ANSWER({said})")


async def _serve(port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with FakeLlmServer(port=port, rule=planned_reply) as fake:
        print(f"READY {fake.openai_base}", flush=True)
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="The parity test's scripted fake LLM.")
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(_serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
