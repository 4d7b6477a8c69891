"""Amazon Bedrock: the Converse wire protocol, and AWS SigV4 request signing.

Two of neuro-san's classes reach Bedrock (``bedrock-runtime.{region}.amazonaws.com``):

- ``bedrock`` with ``beta_use_converse_api: true``: ``POST /model/{modelId}/converse``,
  Bedrock's provider-neutral chat format (:class:`BedrockConverseModel`, here);
- ``anthropic-bedrock`` (and ``bedrock`` for an ``anthropic.`` model without the
  Converse switch): ``POST /model/{modelId}/invoke`` with Anthropic's messages body
  (:class:`~neuro_san.llm.adapters.anthropic.AnthropicModel` with ``bedrock=True``).

Both are signed with SigV4 by :class:`SigV4Signer`, which uses botocore's signer and its
credential chain (llm_config / ``AWS_ACCESS_KEY_ID``…, else botocore's usual chain: env,
shared credentials and config files with ``credentials_profile_name`` / ``AWS_PROFILE``,
SSO, container and instance roles). botocore is AWS's own maintained implementation of
both; signing is security-critical and the chain has many sources, so neither is worth
rewriting. It is an optional dependency (``pip install 'neuro-san-grpc[bedrock]'``): without it
a Bedrock network is refused when it loads.

Converse in short: content blocks are keyed by shape (``{"text"}``, ``{"toolUse"}``,
``{"toolResult"}``, ``{"reasoningContent"}``); ``system`` is a block list; roles strictly
alternate, so a turn's tool results are merged into one user message; the reply's
``stopReason`` is ``max_tokens`` when cut off. ``reasoningContent`` blocks (with their
signatures) are kept and sent back, first, with their assistant turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.adapters.http_model import HttpJsonModel, renamed_action
from neuro_san.llm.adapters.reply_parts import ObjectArgumentsCall, token_count
from neuro_san.llm.errors import LlmMalformedReply
from neuro_san.llm.http import Endpoint, ReplyReader
from neuro_san.llm.interface import DeltaSink, LlmMessage, ModelResponse, ToolCall, ToolSpec, Usage
from neuro_san.llm.streams.bedrock import ConverseStream
from neuro_san.llm.streams.framing import EventStreamDecoder, stream_reader
from neuro_san.llm.turns import alternating_turns

REASONING_KIND = "bedrock-converse"
SIGNING_SERVICE = "bedrock"
EMPTY_TEXT = "(empty)"
_TOOL_USE = ObjectArgumentsCall(
    id_key="toolUseId",
    arguments_key="input",
    id_prefix="tooluse_",
    where="toolUse block {index}",
    complaint="input must be an object",
)


def botocore_available() -> bool:
    try:
        import botocore.auth  # noqa: F401
    except ImportError:
        return False
    return True


class SigV4Signer:
    """Signs each request for ``bedrock`` in ``region`` (see the module docstring)."""

    def __init__(
        self,
        region: str,
        access_key: str = "",
        secret_key: str = "",
        session_token: str = "",
        profile: str = "",
    ) -> None:
        if not botocore_available():
            raise ConfigurationError("Bedrock needs botocore for SigV4 signing: pip install 'neuro-san-grpc[bedrock]'")
        self._region = region
        self._static = (access_key, secret_key, session_token or None) if access_key and secret_key else None
        self._profile = profile or None
        self._chain: Any = None

    def __repr__(self) -> str:  # never the keys
        return f"SigV4Signer(region={self._region!r})"

    async def sign(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        # Botocore is optional (the `bedrock` extra): imported only when signing.
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        if self._static is not None:
            credentials: Any = Credentials(*self._static)
        else:
            # The chain may read files or ask the instance metadata service: off the loop.
            credentials = await asyncio.to_thread(self._chain_credentials)
        request = AWSRequest(method=method, url=url, data=body, headers={"Content-Type": headers["Content-Type"]})
        SigV4Auth(credentials, SIGNING_SERVICE, self._region).add_auth(request)
        return {name: value for name, value in request.headers.items() if name.lower() != "content-type"}

    def _chain_credentials(self) -> Any:
        # Botocore is optional (the `bedrock` extra).
        import botocore.session

        if self._chain is None:
            session = botocore.session.Session(profile=self._profile)
            self._chain = session.get_credentials()
        if self._chain is None:
            raise ConfigurationError(
                "no AWS credentials for Bedrock: set aws_access_key_id/aws_secret_access_key in llm_config, "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, or an instance role"
            )
        return self._chain.get_frozen_credentials()


class BedrockConverseModel(HttpJsonModel):
    """A :class:`~neuro_san.llm.interface.Model` over Bedrock Converse, or
    ``ConverseStream`` when asked for deltas (:mod:`~neuro_san.llm.streams.bedrock`).

    ``extra_fields`` go as ``additionalModelRequestFields``.
    """

    def request_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system, converted = to_converse_messages(messages)
        body: dict[str, Any] = {"messages": converted}
        if system:
            body["system"] = [{"text": system}]
        inference: dict[str, Any] = {}
        if self._max_tokens is not None:
            inference["maxTokens"] = self._max_tokens
        if self._temperature is not None:
            inference["temperature"] = self._temperature
        if inference:
            body["inferenceConfig"] = inference
        if tools:
            body["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": t.name,
                            "description": t.description,
                            "inputSchema": {"json": dict(t.parameters)},
                        }
                    }
                    for t in tools
                ]
            }
        if self._extra_fields:
            body["additionalModelRequestFields"] = self._extra_fields
        return body

    def parse_reply(self, reply: Mapping[str, Any]) -> ModelResponse:
        return parse_converse_reply(reply, self._endpoint.provider, self._model_name)

    def stream_endpoint(self) -> Endpoint:
        return renamed_action(self._endpoint, "/converse", "/converse-stream")

    def stream_body(self, messages: Sequence[LlmMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        return self.request_body(messages, tools)  # the method streams; the body is the same

    def stream_reader(self, on_delta: DeltaSink) -> ReplyReader:
        return stream_reader(EventStreamDecoder(), ConverseStream(on_delta, self.provider), self.provider)


def to_converse_messages(messages: Sequence[LlmMessage]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for Converse, with roles strictly alternating."""
    return alternating_turns(messages, _blocks, assistant_role="assistant", items_key="content")


def _blocks(message: LlmMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        result = {"toolUseId": message.tool_call_id or "", "content": [{"text": message.content or EMPTY_TEXT}]}
        return [{"toolResult": result}]
    blocks: list[dict[str, Any]] = []
    if message.role == "assistant":
        blocks.extend(
            {"reasoningContent": dict(state["block"])}
            for state in message.reasoning
            if state.get("kind") == REASONING_KIND
        )
    if message.content:
        blocks.append({"text": message.content})
    if message.role == "assistant":
        blocks.extend(
            {"toolUse": {"toolUseId": call.id, "name": call.name, "input": dict(call.arguments)}}
            for call in message.tool_calls
        )
    if not blocks:
        blocks.append({"text": EMPTY_TEXT})
    return blocks


def parse_converse_reply(reply: Mapping[str, Any], provider: str, model_name: str) -> ModelResponse:
    output = reply.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        raise LlmMalformedReply("reply has no output.message.content list", provider)
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise LlmMalformedReply(f"content block {index} is not an object", provider)
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), Mapping):
            calls.append(_TOOL_USE.read(index, block["toolUse"], provider))
        elif isinstance(block.get("reasoningContent"), Mapping):
            reasoning.append({"kind": REASONING_KIND, "block": dict(block["reasoningContent"])})
    usage = reply.get("usage")
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(token_count(usage, "inputTokens"), token_count(usage, "outputTokens")),
        model=model_name,
        reasoning=tuple(reasoning),
        truncated=reply.get("stopReason") == "max_tokens",
    )
