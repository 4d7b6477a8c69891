"""The facade's events of one chat (:mod:`gateway.agents`) as AG-UI events.

A run is ``RUN_STARTED``, then what the network does as it happens, then ``RUN_FINISHED``
or ``RUN_ERROR``:

- the front man's answer as it is written: ``TEXT_MESSAGE_START``/``CONTENT``/``END``
  (one assistant message per stretch of text; one written whole when the model did not
  stream it);
- each tool call of any agent (a sub-agent, a coded tool, an external network):
  ``STEP_STARTED`` (the called agent's path, ``front/helper``), ``TOOL_CALL_START``/
  ``ARGS``/``END`` with its arguments when it is called, and ``TOOL_CALL_RESULT`` then
  ``STEP_FINISHED`` when its result comes back to the caller;
- the other agents' messages (their thinking, what MAXIMAL shows) as ``REASONING_*``;
  progress reports of coded tools as ``CUSTOM`` events named ``neuro-san.progress``;
- the sly_data the network lets out as ``STATE_SNAPSHOT``, and the request's token
  accounting as ``RUN_FINISHED.usage``.

AG-UI clients track open messages and steps, so a text message is ended before any
other event, and step names are unique among the steps open at once.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict, deque
from collections.abc import Mapping
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from gateway.agents.interface import Answer, AnswerDelta, ChatEvent, Step, StepKind

#: The CUSTOM event of a coded tool's progress report.
PROGRESS_EVENT = "neuro-san.progress"


def is_keepalive(event: ChatEvent) -> bool:
    """The service's keep-alive on a quiet stream: no event, an SSE comment
    (``AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS``)."""
    return isinstance(event, Step) and event.is_keepalive


def _new_id() -> str:
    return uuid.uuid4().hex


class RunTranslator:
    """Turns one chat's events into AG-UI events, in order (one instance per run)."""

    def __init__(self, thread_id: str, run_id: str, parent_run_id: str | None = None) -> None:
        self._thread_id = thread_id
        self._run_id = run_id
        self._parent_run_id = parent_run_id
        #: The assistant message being written, and what it holds so far.
        self._message_id: str | None = None
        #: The last assistant message's id: the front man's tool calls are its parts.
        self._last_message_id: str | None = None
        #: The text of the last assistant message (open or just ended), to write an answer
        #: the model did not stream, and not to write one twice.
        self._last_text = ""
        #: Tool calls waiting for their result, by the called tool's origin: (call id, step name).
        self._calls: dict[tuple[str, ...], deque[tuple[str, str]]] = defaultdict(deque)
        self._open_steps: set[str] = set()
        self._usage: list[TokenUsage] = []

    def started(self) -> list[BaseEvent]:
        return [RunStartedEvent(thread_id=self._thread_id, run_id=self._run_id, parent_run_id=self._parent_run_id)]

    def translate(self, event: ChatEvent) -> list[BaseEvent]:
        """The AG-UI events ``event`` is (the last ones for an Answer or a ChatFailed)."""
        if isinstance(event, AnswerDelta):
            return self._delta(event.text)
        if isinstance(event, Step):
            return self._step(event)
        if isinstance(event, Answer):
            return self._answer(event)
        return self.failed(event.code.name, event.message)

    def failed(self, code: str, message: str) -> list[BaseEvent]:
        """End the run with ``RUN_ERROR`` (our error's code name and message)."""
        return [*self._end_text(), RunErrorEvent(message=message or code, code=code)]

    # ---- the answer ----------------------------------------------------------------------

    def _delta(self, text: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if self._message_id is None:
            self._message_id = self._last_message_id = _new_id()
            self._last_text = ""
            events.append(TextMessageStartEvent(message_id=self._message_id, role="assistant"))
        self._last_text += text
        events.append(TextMessageContentEvent(message_id=self._message_id, delta=text))
        return events

    def _end_text(self) -> list[BaseEvent]:
        if self._message_id is None:
            return []
        message_id, self._message_id = self._message_id, None
        return [TextMessageEndEvent(message_id=message_id)]

    def _whole_text(self, text: str) -> list[BaseEvent]:
        """``text`` as an assistant message, unless the last one already said it (streamed)."""
        if not text.strip() or text.strip() == self._last_text.strip():
            return []
        return [*self._end_text(), *self._delta(text), *self._end_text()]

    def _answer(self, answer: Answer) -> list[BaseEvent]:
        events = [*self._whole_text(answer.text), *self._end_text()]
        for name in sorted(self._open_steps):  # a tool whose result never came back (should not happen)
            events.append(StepFinishedEvent(step_name=name))
        self._open_steps.clear()
        if answer.sly_data:
            events.append(StateSnapshotEvent(snapshot=dict(answer.sly_data)))
        result = {"structure": dict(answer.structure)} if answer.structure is not None else None
        events.append(RunFinishedEvent(thread_id=self._thread_id, run_id=self._run_id, result=result,
                                       usage=self._usage or None))
        return events

    # ---- what the network does -------------------------------------------------------------

    def _step(self, step: Step) -> list[BaseEvent]:
        invoking = step.invoking
        if invoking is not None:
            return self._called(step, *invoking)
        if step.kind == StepKind.TOOL_RESULT:
            return self._returned(step)
        if step.is_keepalive:
            return []
        if step.kind == StepKind.PROGRESS:
            value = {"origin": list(step.origin), "text": step.text, "structure": step.structure}
            return [*self._end_text(), CustomEvent(name=PROGRESS_EVENT, value=value)]
        usage = step.usage
        if usage is not None:
            self._note_usage(step, usage)
            return []
        if step.arguments is not None or step.result is not None:
            # The called tool's own "Received arguments:" / "Got result:": its call and
            # result are already events (the caller's Invoking and AGENT_TOOL_RESULT).
            return []
        if len(step.origin) <= 1:
            # The front man's own messages are the assistant's text.
            return self._whole_text(step.text) if step.kind == StepKind.AI else []
        return self._reasoning(step.text)

    def _called(self, step: Step, name: str, arguments: Any) -> list[BaseEvent]:
        callee = (*step.origin, name)
        step_name = self._step_name("/".join(callee))
        call_id = _new_id()
        self._calls[callee].append((call_id, step_name))
        parent = self._last_message_id if len(step.origin) == 1 else None
        events = self._end_text()
        events += [
            StepStartedEvent(step_name=step_name),
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=parent),
            ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(arguments if arguments is not None else {},
                                                                     ensure_ascii=False, default=str)),
            ToolCallEndEvent(tool_call_id=call_id),
        ]
        return events

    def _returned(self, step: Step) -> list[BaseEvent]:
        waiting = self._calls.get(step.result_of)
        if not waiting:
            return []  # a result of no call we showed (cannot happen with a well-formed stream)
        call_id, step_name = waiting.popleft()
        self._open_steps.discard(step_name)
        return [
            *self._end_text(),
            ToolCallResultEvent(message_id=_new_id(), tool_call_id=call_id, content=step.text, role="tool"),
            StepFinishedEvent(step_name=step_name),
        ]

    def _reasoning(self, text: str) -> list[BaseEvent]:
        if not text:
            return []  # e.g. an agent's token accounting: no thought to show
        message_id = _new_id()
        return [
            *self._end_text(),
            ReasoningStartEvent(message_id=message_id),
            ReasoningMessageStartEvent(message_id=message_id, role="reasoning"),
            ReasoningMessageContentEvent(message_id=message_id, delta=text),
            ReasoningMessageEndEvent(message_id=message_id),
            ReasoningEndEvent(message_id=message_id),
        ]

    def _step_name(self, base: str) -> str:
        name, count = base, 1
        while name in self._open_steps:  # the same tool called again while a call of it is open
            count += 1
            name = f"{base}#{count}"
        self._open_steps.add(name)
        return name

    def _note_usage(self, step: Step, structure: Mapping[str, Any]) -> None:
        """The request's token accounting (the front man's last report, with ``models``)."""
        models = structure.get("models")
        if len(step.origin) != 1 or not isinstance(models, Mapping):
            return
        usage: list[TokenUsage] = []
        for provider, by_model in models.items():
            if not isinstance(by_model, Mapping):
                continue
            for model, counts in by_model.items():
                if isinstance(counts, Mapping):
                    usage.append(TokenUsage(provider=str(provider), model=str(model),
                                            input_tokens=_count(counts.get("prompt_tokens")),
                                            output_tokens=_count(counts.get("completion_tokens")),
                                            total_tokens=_count(counts.get("total_tokens"))))
        self._usage = usage


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
