"""What every HTTP JSON model adapter shares: identity, and one call's shape.

An adapter (OpenAI chat completions, Anthropic messages) only says how to build a
request body and how to read a reply; sending it, retrying and translating errors is
:class:`~neuro_san.llm.http.HttpPool`'s job.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from neuro_san.llm.adapters.reply_parts import new_tool_call_id
from neuro_san.llm.http import Endpoint, HttpPool, ReplyReader
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelResponse, TextDelta, ToolSpec


class ModelSettings(TypedDict, total=False):
    """The settings every adapter takes, by keyword; an adapter with settings of its own
    declares those and passes these on with ``**settings: Unpack[ModelSettings]``."""

    #: Sampling temperature; None leaves it to the provider.
    temperature: float | None
    #: The reply's length limit; None leaves it to the provider (Anthropic has its own
    #: default, since it requires one).
    max_tokens: int | None
    #: Provider-specific request fields in the provider's own spelling. Each adapter
    #: says where they go: the body itself (chat completions), ``generationConfig``
    #: (Gemini), ``additionalModelRequestFields`` (Bedrock Converse).
    extra_fields: Mapping[str, Any] | None


class HttpJsonModel(ABC):
    """Base of the adapters: a :class:`~neuro_san.llm.interface.Model` over one endpoint."""

    def __init__(
        self,
        pool: HttpPool,
        endpoint: Endpoint,
        model_name: str,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_fields: Mapping[str, Any] | None = None,
    ) -> None:
        self._pool = pool
        self._endpoint = endpoint
        self._model_name = model_name
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._extra_fields = dict(extra_fields or {})

    @property
    def provider(self) -> str:
        return self._endpoint.provider

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model_name!r}, {self._endpoint.url!r})"

    @abstractmethod
    def request_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The JSON body for one call."""

    @abstractmethod
    def parse_reply(self, reply: Mapping[str, Any]) -> ModelResponse:
        """The model's turn in a successful reply; LlmMalformedReply when it is not one."""

    def stream_endpoint(self) -> Endpoint:
        """Where a streamed call goes (Gemini and Bedrock name another method)."""
        return self._endpoint

    def stream_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The JSON body for one streamed call."""
        return {**self.request_body(messages, tools), "stream": True}

    @abstractmethod
    def stream_reader(self, on_delta: DeltaSink) -> ReplyReader:
        """Reads one streamed reply into the non-streaming reply's shape, telling
        ``on_delta`` the text as it comes (see :mod:`neuro_san.llm.streams.framing`)."""

    async def complete(
        self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec], on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        target = f"model {self._model_name!r}"
        if on_delta is None:
            reply = await self._pool.post(self._endpoint, self.request_body(messages, tools), target=target)
            return unique_call_ids(self.parse_reply(reply), messages)
        answered = False

        def sink(delta: TextDelta) -> None:
            nonlocal answered
            answered = answered or not delta.reasoning
            on_delta(delta)

        reply = await self._pool.post(
            self.stream_endpoint(), self.stream_body(messages, tools), target=target, read=self.stream_reader(sink)
        )
        response = self.parse_reply(reply)
        if response.text and not answered:
            # Answered whole (a server that does not stream): the text is one delta, so
            # the deltas still add up to the reply.
            on_delta(TextDelta(response.text))
        return unique_call_ids(response, messages)


def renamed_action(endpoint: Endpoint, action: str, streamed: str, query: str = "") -> Endpoint:
    """``endpoint`` with the URL's last ``action`` replaced by ``streamed`` (and ``query``
    added): the streaming method of a provider that names it apart (Gemini, Bedrock)."""
    base, found, rest = endpoint.url.rpartition(action)
    if not found:
        return endpoint
    url = f"{base}{streamed}{rest}"
    if query:
        url += ("&" if "?" in url else "?") + query
    return dataclasses.replace(endpoint, url=url)


def unique_call_ids(response: ModelResponse, messages: Sequence[LlmMessage]) -> ModelResponse:
    """``response`` with any tool-call id that the conversation (or the reply itself)
    already used replaced by a fresh one: some servers number calls per reply
    (``call_0`` every round), and a repeated id makes providers pair results wrongly."""
    if not response.tool_calls:
        return response
    used = {call.id for message in messages for call in message.tool_calls}
    calls = []
    for call in response.tool_calls:
        if call.id in used:
            call = dataclasses.replace(call, id=new_tool_call_id())
        used.add(call.id)
        calls.append(call)
    return dataclasses.replace(response, tool_calls=tuple(calls))
