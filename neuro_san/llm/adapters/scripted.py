"""A deterministic, offline stand-in for an LLM: for demos and tests, never a real model.

Networks select it with ``llm_config: {class: scripted}``. It reads the conversation and
plays a small script, so the bundled examples run with no network and no API key, and
the same input always gives the same output. Its answers are visibly scripted.

Behaviour for one agent invocation (everything after the last user message):

1. No tool result yet and tools on offer: call the tools of ``calls`` all at once (as a
   model asking for parallel calls would). Each entry is ``{tool, args}`` where every
   string in ``args`` may use ``{input}`` (the user text) and ``{arithmetic}`` (the
   arithmetic found in it, see :func:`arithmetic_in`: ``"and 6 * 8?"`` gives ``6 * 8``).
   Without ``calls``, it calls the first tool on offer with every parameter set to the
   user text (or, for a sub-agent, to the matching argument its caller passed in
   ``The <name> is '<value>'.``).
2. Otherwise answer with ``reply``, a template over ``{input}`` (the user text),
   ``{results}`` (the tool results joined by ``"; "``), ``{history}`` (how many
   earlier user turns the conversation holds) and ``{previous}`` (the user's turn before
   this one, which only a carried ``chat_context`` can give). The default is ``{results}`` when
   there are results, else ``{input}``. ``{subject}`` is what the agent was asked:
   the one argument its caller passed, else the user text.
3. ``replies``, a list of ``{match, reply}``, is tried before ``reply``: the first whose
   ``match`` (a regular expression, case-insensitive) is found in the subject gives the
   answer. ``no_call_reply`` answers a turn in which no tool was called (a ``calls``
   entry with ``"when": "arithmetic"`` is only made when the subject holds arithmetic),
   so a bundled network answers like a polite small model instead of passing on an error.

Token usage is counted in whitespace-separated words, so accounting is reproducible.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelResponse, TextDelta, ToolCall, ToolSpec, Usage


class _SafeFormat(dict[str, str]):
    """Leaves unknown ``{placeholders}`` as they are instead of failing."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fill(template: str, values: Mapping[str, str]) -> str:
    return template.format_map(_SafeFormat(values))


_ARGUMENT_SENTENCE = re.compile(r"The (\w+) is '(.*?)'\.(?=\s|$)", re.S)
_JSON_BLOCK = re.compile(r"```json\n(.*)```", re.S)


def called_arguments(text: str) -> dict[str, str]:
    """The arguments a calling agent put in a sub-agent's input, in neuro-san's
    ``The <name> is '<value>'.`` sentences, or in the JSON block a ``/name`` network
    called as a tool receives."""
    block = _JSON_BLOCK.fullmatch(text.strip())
    if block is not None:
        try:
            given = json.loads(block.group(1))
        except json.JSONDecodeError:
            given = None
        if isinstance(given, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in given.items()}
    return dict(_ARGUMENT_SENTENCE.findall(text))


_ARITHMETIC_RUN = re.compile(r"[\d.\s+\-*/%()]+")


def arithmetic_in(text: str) -> str:
    """The arithmetic in ``text``, as a model would pick it out of a question: the longest
    run of numbers, operators (``+ - * / % **``) and parentheses that holds a digit,
    without a sentence's full stop, a dangling operator or unmatched outer parentheses.
    ``text`` itself when it holds no number (so the tool says what is wrong with it)."""
    best = ""
    for match in _ARITHMETIC_RUN.finditer(text):
        run = _trim(match.group())
        if any(c.isdigit() for c in run) and len(run) > len(best):
            best = run
    return best or text


def _trim(run: str) -> str:
    previous = None
    while run != previous:
        previous = run
        run = run.strip().rstrip("+-*/%.").strip()
        if run.endswith(")") and run.count(")") > run.count("("):
            run = run[:-1]
        if run.startswith("(") and run.count("(") > run.count(")"):
            run = run[1:]
    return run


def _replies(raw: Any) -> list[tuple[re.Pattern[str], str]]:
    """``replies`` checked once, at load: a list of ``{match, reply}`` strings."""
    if raw is None:
        return []
    problem = ConfigurationError("llm_config.replies of the scripted model must be a list of {match, reply}")
    if not isinstance(raw, list):
        raise problem
    replies = []
    for entry in raw:
        if not (isinstance(entry, Mapping) and all(isinstance(entry.get(k), str) for k in ("match", "reply"))):
            raise problem
        try:
            replies.append((re.compile(entry["match"], re.I), entry["reply"]))
        except re.error as error:
            reason = f"llm_config.replies: bad regular expression {entry['match']!r}: {error}"
            raise ConfigurationError(reason) from None
    return replies


def _words(text: str) -> int:
    return len(text.split())


class ScriptedModel:
    """The scripted stand-in model. Shared by every request that uses its config."""

    provider = "scripted"

    def __init__(
        self,
        reply: str | None = None,
        calls: Sequence[Mapping[str, Any]] | None = None,
        model_name: str = "scripted",
        replies: Sequence[tuple[re.Pattern[str], str]] = (),
        no_call_reply: str | None = None,
    ) -> None:
        self._reply = reply
        self._replies = tuple(replies)
        self._no_call_reply = no_call_reply
        self._calls = list(calls) if calls is not None else None
        self._model_name = model_name

    @property
    def model_name(self) -> str:
        return self._model_name

    @classmethod
    def from_config(cls, llm_config: Mapping[str, Any]) -> ScriptedModel:
        reply = llm_config.get("reply")
        calls = llm_config.get("calls")
        if reply is not None and not isinstance(reply, str):
            raise ConfigurationError("llm_config.reply of the scripted model must be a string")
        if calls is not None and not (
            isinstance(calls, list) and all(isinstance(c, Mapping) and "tool" in c for c in calls)
        ):
            raise ConfigurationError(
                "llm_config.calls of the scripted model must be a list of {tool, args}"
            )
        no_call_reply = llm_config.get("no_call_reply")
        if no_call_reply is not None and not isinstance(no_call_reply, str):
            raise ConfigurationError("llm_config.no_call_reply of the scripted model must be a string")
        return cls(
            reply=reply,
            calls=calls,
            model_name=str(llm_config.get("model_name", "scripted")),
            replies=_replies(llm_config.get("replies")),
            no_call_reply=no_call_reply,
        )

    async def complete(
        self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec], on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        user_text = messages[last_user].content if last_user >= 0 else ""
        turn = messages[last_user + 1 :]
        results = [m.content for m in turn if m.role == "tool"]
        prompt_tokens = sum(_words(m.content) for m in messages)
        # What a sub-agent is asked: the one argument its caller passed, else the text.
        given = called_arguments(user_text)
        subject = next(iter(given.values())) if len(given) == 1 else user_text
        values = {
            "input": user_text,
            "subject": subject,
            "arithmetic": arithmetic_in(subject),
            "results": "; ".join(results),
            "history": str(sum(1 for m in messages[:last_user] if m.role == "user")),
            "previous": next((m.content for m in reversed(messages[:last_user]) if m.role == "user"), ""),
        }
        if tools and not results and not any(m.tool_calls for m in turn):
            calls = self._plan_calls(tools, values, given, subject)
            if calls:
                return ModelResponse(
                    tool_calls=tuple(calls),
                    usage=Usage(prompt_tokens, sum(_words(str(c.arguments)) for c in calls)),
                    model=self._model_name,
                )
        template = self._template(subject, bool(results))
        text = _fill(template, values)
        if on_delta is not None:
            # Streamed a word at a time (with its following spaces), as a provider would,
            # letting the loop run between words as a network read would.
            for piece in re.findall(r"\S+\s*|\s+", text):
                on_delta(TextDelta(piece))
                await asyncio.sleep(0)
        return ModelResponse(text=text, usage=Usage(prompt_tokens, _words(text)), model=self._model_name)

    def _template(self, subject: str, has_results: bool) -> str:
        for pattern, reply in self._replies:
            if pattern.search(subject):
                return reply
        if not has_results and self._no_call_reply is not None:
            return self._no_call_reply
        if self._reply is not None:
            return self._reply
        return "{results}" if has_results else "{input}"

    def _plan_calls(
        self, tools: Sequence[ToolSpec], values: Mapping[str, str], given: Mapping[str, str], subject: str
    ) -> list[ToolCall]:
        offered = {t.name: t for t in tools}
        if self._calls is None:
            first = tools[0]
            props = first.parameters.get("properties") or {}
            args = {name: given.get(name, subject) for name in props}
            return [ToolCall(id="call_1", name=first.name, arguments=args)]
        calls = []
        for n, planned in enumerate(self._calls, start=1):
            name = str(planned["tool"])
            if name not in offered:
                # An external network is offered as __name (/deep/x as __deep__x); the
                # script may name it as written in the network file.
                name = "__" + name.lstrip("/").replace("/", "__")
            if name not in offered:
                continue
            if planned.get("when") == "arithmetic" and not any(c.isdigit() for c in values["arithmetic"]):
                continue  # nothing to compute: the model answers instead of calling
            raw_args = planned.get("args") or {}
            args = {k: _fill(v, values) if isinstance(v, str) else v for k, v in raw_args.items()}
            calls.append(ToolCall(id=f"call_{n}", name=name, arguments=args))
        return calls
