"""Which OpenAI parameters we honour, refuse or ignore by design, and the checks of each.

Every parameter of a request is one of three (``docs/compatibility.md`` lists them):

- **honoured**: read and acted on (``model``, ``messages``/``input``, ``stream``…);
- **ignored by design**: hints a network has no use for, whose absence changes nothing a
  client relies on (``user``, sampling knobs the network's ``llm_config`` decides);
  checked for their type all the same, so a wrong one is still a 400;
- **refused unless neutral**: what would change behaviour (client tools, ``n > 1``,
  ``logprobs``, output caps, other modalities): a 400 that names it, unless the value is
  the default that asks for nothing (``n: 1``, ``tools: []``, ``logprobs: false``…).

A parameter in none of the lists is refused as unrecognized, as OpenAI's own API does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.agents.interface import HistoryMessage
from gateway.openai.errors import OpenAiError, invalid
from neuro_san.core.errors import clip

Check = Callable[[Any], bool]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _anything(_value: Any) -> bool:
    return True


_TYPE_NAMES: dict[Check, str] = {
    _number: "a number", _integer: "an integer", _string: "a string", _boolean: "a boolean",
    _object: "an object", _string_map: "an object of strings", _anything: "any value",
}


@dataclass(frozen=True, slots=True)
class Rules:
    """One endpoint's parameters: honoured and ignored ones by type, refused ones by the
    values that are neutral and the reason."""

    honoured: Mapping[str, Check]
    ignored: Mapping[str, Check]
    #: name → (neutral values, why it is refused otherwise).
    refused: Mapping[str, tuple[tuple[Any, ...], str]]

    def check(self, body: Mapping[str, Any]) -> None:
        for name, value in body.items():
            if name in self.refused:
                neutral, why = self.refused[name]
                if value is not None and not any(value == n and type(value) is type(n) for n in neutral):
                    raise invalid(f"'{clip(name)}' is not supported: {why}", name, "unsupported_parameter")
                continue
            check = self.honoured.get(name) or self.ignored.get(name)
            if check is None:
                raise invalid(f"Unrecognized request argument supplied: {clip(name)}", name, "unknown_parameter")
            if value is not None and not check(value):
                raise invalid(f"'{name}' must be {_TYPE_NAMES[check]}", name, "invalid_type")


_NO_TOOLS = "networks bring their own tools; client-side tools and functions are not offered to them"
_SAMPLING = "the network's llm_config sets its models' limits"

CHAT_RULES = Rules(
    honoured={"model": _string, "messages": _anything, "stream": _boolean, "stream_options": _object,
              "sly_data": _object},
    ignored={"user": _string, "temperature": _number, "top_p": _number, "presence_penalty": _number,
             "frequency_penalty": _number, "seed": _integer, "metadata": _string_map, "service_tier": _string,
             "prompt_cache_key": _string, "safety_identifier": _string, "parallel_tool_calls": _boolean},
    refused={
        "tools": (([],), _NO_TOOLS), "functions": (([],), _NO_TOOLS),
        "tool_choice": (("none", "auto"), _NO_TOOLS), "function_call": (("none", "auto"), _NO_TOOLS),
        "n": ((1,), "a network gives one answer per turn (n must be 1)"),
        "logprobs": ((False,), "log probabilities are not reported"),
        "top_logprobs": ((0,), "log probabilities are not reported"),
        "modalities": ((["text"],), "answers are text only"),
        "audio": ((), "answers are text only"),
        "response_format": (({"type": "text"},), "the network decides its answer's format"),
        "max_tokens": ((), _SAMPLING), "max_completion_tokens": ((), _SAMPLING),
        "stop": ((), "the network decides where its answer ends"),
        "logit_bias": (({},), _SAMPLING), "prediction": ((), "predicted outputs are not supported"),
        "reasoning_effort": ((), _SAMPLING), "verbosity": ((), _SAMPLING),
        "web_search_options": ((), _NO_TOOLS),
        "store": ((False,), "chat completions are not stored (use /v1/responses to continue by id)"),
    },
)

RESPONSES_RULES = Rules(
    honoured={"model": _string, "input": _anything, "stream": _boolean, "previous_response_id": _string,
              "store": _boolean, "metadata": _string_map, "sly_data": _object},
    ignored={"user": _string, "temperature": _number, "top_p": _number, "service_tier": _string,
             "prompt_cache_key": _string, "safety_identifier": _string, "parallel_tool_calls": _boolean,
             "stream_options": _object, "truncation": _string},
    refused={
        "tools": (([],), _NO_TOOLS), "tool_choice": (("none", "auto"), _NO_TOOLS),
        "instructions": (("",), "the network's instructions are its own"),
        "max_output_tokens": ((), _SAMPLING), "max_tool_calls": ((), _NO_TOOLS),
        "reasoning": (({},), _SAMPLING), "top_logprobs": ((0,), "log probabilities are not reported"),
        "text": (({"format": {"type": "text"}},), "the network decides its answer's format"),
        "include": (([],), "no extra output data is reported"),
        "background": ((False,), "background responses are not supported"),
        "conversation": ((), "conversations are continued with previous_response_id"),
        "prompt": ((), "prompt templates are not supported"),
    },
)


def required_model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("'model' is required: the name of an agent network (GET /v1/models lists them)", "model")
    return model


def text_of(content: Any, param: str, part_types: tuple[str, ...]) -> str:
    """A message's content as text: a string, or a list of text parts (``part_types``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in part_types or not isinstance(part.get("text"), str):
                shown = clip(kind) if isinstance(kind, str) else "not a text part"
                raise invalid(f"'{param}[{index}]' is {shown}: only text content is supported", param,
                              "unsupported_content")
            texts.append(part["text"])
        return "".join(texts)
    raise invalid(f"'{param}' must be a string or a list of text parts", param, "invalid_type")


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request's messages read as a turn: the last user message and what came before."""

    user_text: str
    history: tuple[HistoryMessage, ...]


def conversation_of(
    messages: Any, param: str, part_types: tuple[str, ...],
    item_check: Callable[[dict[str, Any], str], None] | None = None,
) -> Conversation:
    """``messages`` (chat ``messages`` or Responses ``input`` items) as a turn. Only user and
    assistant text is carried: system and developer messages are refused (the network's
    instructions are its own), tool messages too (no client tools)."""
    if not isinstance(messages, list) or not messages:
        raise invalid(f"'{param}' must be a non-empty list of messages", param)
    read: list[HistoryMessage] = []
    for index, message in enumerate(messages):
        where = f"{param}[{index}]"
        if not isinstance(message, dict):
            raise invalid(f"'{where}' must be an object", where, "invalid_type")
        if item_check is not None:
            item_check(message, where)
        role = message.get("role")
        if role in ("system", "developer"):
            raise invalid(f"'{where}': {role} messages are not supported: the network's instructions are its own",
                          where, "unsupported_role")
        if role not in ("user", "assistant"):
            shown = clip(role) if isinstance(role, str) else "missing"
            raise invalid(f"'{where}.role' is {shown}: only user and assistant messages are supported", where,
                          "unsupported_role")
        if message.get("tool_calls") or message.get("function_call"):
            raise invalid(f"'{where}' has tool calls: {_NO_TOOLS}", where, "unsupported_parameter")
        read.append(HistoryMessage(role, text_of(message.get("content"), f"{where}.content", part_types)))
    last = read[-1]
    if last.role != "user":
        raise invalid(f"the last of '{param}' must be the user's message (the turn to answer)", param)
    if not last.text.strip():
        raise invalid(f"the last of '{param}' has no text", param)
    return Conversation(last.text, tuple(read[:-1]))


def stream_usage(body: Mapping[str, Any]) -> bool:
    """``stream_options.include_usage`` (only with ``stream: true``, as OpenAI says)."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not body.get("stream"):
        raise invalid("'stream_options' is only allowed with 'stream: true'", "stream_options")
    unknown = set(options) - {"include_usage", "include_obfuscation"}
    if unknown:
        raise invalid(f"'stream_options.{clip(sorted(unknown)[0])}' is not supported", "stream_options")
    include = options.get("include_usage", False)
    if not isinstance(include, bool):
        raise invalid("'stream_options.include_usage' must be a boolean", "stream_options.include_usage")
    return include


def sly_data_of(body: Mapping[str, Any]) -> dict[str, Any] | None:
    value = body.get("sly_data")
    return dict(value) if isinstance(value, dict) else None


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object")
    return body


__all__ = ["CHAT_RULES", "RESPONSES_RULES", "Conversation", "OpenAiError", "Rules", "conversation_of",
           "required_model", "require_object", "sly_data_of", "stream_usage", "text_of"]
