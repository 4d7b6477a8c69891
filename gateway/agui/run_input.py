"""A request's body, AG-UI's ``RunAgentInput``, read into what one run needs.

The body is validated against the protocol's own pydantic model (``ag_ui.core``), so a
wrong type or a missing field is a 400 naming the field (never echoing its value: the
state is sly_data, which may hold secrets). What the model accepts but this server does
not do is said apart (:attr:`RunRequest.unsupported`): the front-end answers it with
``RUN_ERROR``, as AG-UI clients show a failed run, rather than ignore it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import ValidationError

from gateway.agents.interface import HistoryMessage

#: Messages of ``messages`` that are the client's record of our own events (tool calls'
#: results, reasoning, activity): the conversation's history is its user and assistant texts.
_REFLECTIONS = frozenset({"tool", "reasoning", "activity"})
#: How many validation problems a 400 lists.
_MAX_PROBLEMS = 5


class BadRunInput(ValueError):
    """The body is not a RunAgentInput this server takes; ``field`` names where."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One run, as the front-end asks the network for it."""

    thread_id: str
    run_id: str
    parent_run_id: str | None
    #: The last message's text: the user's turn.
    text: str
    #: The user and assistant texts before it, oldest first (used when the thread has no
    #: stored conversation).
    history: tuple[HistoryMessage, ...]
    #: ``state`` as the turn's sly_data (None when empty).
    sly_data: Mapping[str, Any] | None
    #: Why the run cannot be done as asked (client-side tools, context…), else None.
    unsupported: str | None = None


def read_run_input(body: Any) -> RunRequest:
    """The run ``body`` asks for; raises :class:`BadRunInput`."""
    if not isinstance(body, dict):
        raise BadRunInput("the body must be a JSON object: AG-UI's RunAgentInput")
    try:
        run = RunAgentInput.model_validate(body)
    except ValidationError as error:
        raise BadRunInput(_problems(error.errors(include_input=False, include_url=False)),
                          _where(error.errors()[0]["loc"]) if error.errors() else "") from None
    if not run.thread_id or not run.run_id:
        raise BadRunInput("threadId and runId must not be empty", "threadId" if not run.thread_id else "runId")
    if not run.messages:
        raise BadRunInput("messages must end with the user's message", "messages")
    last = run.messages[-1]
    if last.role != "user":
        raise BadRunInput(f"the last message must be the user's (role user), not {last.role!r}",
                          f"messages[{len(run.messages) - 1}].role")
    text = _text(last.content, f"messages[{len(run.messages) - 1}].content")
    history = _history(run.messages[:-1])
    state = run.state
    if state is not None and not isinstance(state, dict):
        raise BadRunInput("state must be an object (it is the network's sly_data)", "state")
    return RunRequest(run.thread_id, run.run_id, run.parent_run_id, text, history, state or None,
                      _unsupported(run))


def _unsupported(run: RunAgentInput) -> str | None:
    # Each would change what the run does; none is ignored.
    if run.tools:
        names = ", ".join(sorted(tool.name for tool in run.tools)[:5])
        return (f"client-side tools (front-end actions: {names}) are not supported: a network's tools are its "
                "own; send no tools")
    if run.context:
        return "context entries are not supported: put what the network must know in the user's message"
    if run.forwarded_props:
        return "forwardedProps are not supported: this server reads none"
    if run.resume:
        return "resume (interrupts) is not supported: a network's run does not pause for the client"
    return None


def _history(messages: Sequence[Any]) -> tuple[HistoryMessage, ...]:
    history: list[HistoryMessage] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.role in ("system", "developer"):
            raise BadRunInput(f"{message.role} messages are not taken: a network's instructions are its own",
                              f"{where}.role")
        if message.role in _REFLECTIONS:
            continue
        if message.role == "user":
            history.append(HistoryMessage("user", _text(message.content, f"{where}.content")))
        elif message.role == "assistant" and message.content:  # a message of tool calls only has no text
            history.append(HistoryMessage("assistant", message.content))
    return tuple(history)


def _text(content: Any, where: str) -> str:
    """A user message's text: a string, or its text parts (other media are refused)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        if getattr(part, "type", None) != "text":
            raise BadRunInput(f"only text content is taken, not {getattr(part, 'type', '?')!r}", where)
        texts.append(str(part.text))
    return "\n".join(texts)


def _where(location: Sequence[Any]) -> str:
    parts: list[str] = []
    for item in location:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def _problems(errors: Sequence[Mapping[str, Any]]) -> str:
    listed = "; ".join(f"{_where(e['loc']) or 'body'}: {e['msg']}" for e in errors[:_MAX_PROBLEMS])
    more = f" (and {len(errors) - _MAX_PROBLEMS} more)" if len(errors) > _MAX_PROBLEMS else ""
    return f"not an AG-UI RunAgentInput: {listed}{more}"
