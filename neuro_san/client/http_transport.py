"""The HTTP transport: the gateway's REST API over one shared ``aiohttp`` session.

Responses are parsed into the same protobuf messages the gRPC transport returns
(unknown fields ignored), so both transports share one conversion to typed results.
``streaming_chat`` reads JSON lines split strictly on ``\\n``; a last line
``{"error": Status}`` (an error after the stream began) raises like an HTTP error
before it would.
"""

# `timeout` is the call's deadline, handed to grpc/aiohttp, which enforce it natively (and
# asyncio.timeout would be wrong in the streaming generators): hence no ASYNC109.
# ruff: noqa: ASYNC109

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
from google.protobuf import json_format

from neuro_san.api.grpc import agent_pb2, concierge_pb2
from neuro_san.client.errors import ClientError, DeadlineExceeded, Unavailable, code_for_http_status, error_for
from neuro_san.core.errors import Code

API = "/api/v1"


class HttpTransport:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def description(self) -> str:
        return self.base_url

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(timeout=_timeout(None))
            self._loop = loop
        return self._session

    def _url(self, agent: str | None, method: str) -> str:
        if agent is None:
            return f"{self.base_url}{API}/{method}"
        return f"{self.base_url}{API}/{quote(agent, safe='/')}/{method}"

    @staticmethod
    def _headers(metadata: Mapping[str, str] | None, timeout: float | None) -> dict[str, str]:
        # Plain headers, as neuro-san's HTTP clients send them; the gateway forwards the
        # ones named in AGENT_FORWARDED_REQUEST_METADATA.
        headers = {str(k): str(v) for k, v in (metadata or {}).items()}
        if timeout is not None:
            headers["Grpc-Timeout"] = f"{max(1, int(timeout * 1000))}m"
        return headers

    async def _get(
        self, agent: str | None, method: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> dict[str, Any]:
        url = self._url(agent, method)
        try:
            headers = self._headers(metadata, timeout)
            async with self._client().get(url, headers=headers, timeout=_timeout(timeout)) as response:
                if response.status != 200:
                    raise await self._status_error(response, agent)
                body = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as error:
            raise self._transport_error(error, agent, timeout) from None
        if not isinstance(body, dict):
            raise error_for(Code.INTERNAL, f"{url} answered something that is not a JSON object", agent=agent)
        return body

    async def list(self, timeout: float | None) -> concierge_pb2.ConciergeResponse:
        body = await self._get(None, "list", None, timeout)
        return json_format.ParseDict(body, concierge_pb2.ConciergeResponse(), ignore_unknown_fields=True)

    async def function(
        self, agent: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> agent_pb2.FunctionResponse:
        body = await self._get(agent, "function", metadata, timeout)
        # The function dict may carry keys the proto does not know (upstream's `invocation`).
        function = body.get("function") if isinstance(body.get("function"), dict) else {}
        return json_format.ParseDict({"function": function}, agent_pb2.FunctionResponse(), ignore_unknown_fields=True)

    async def connectivity(
        self, agent: str, metadata: Mapping[str, str] | None, timeout: float | None
    ) -> agent_pb2.ConnectivityResponse:
        body = await self._get(agent, "connectivity", metadata, timeout)
        return json_format.ParseDict(body, agent_pb2.ConnectivityResponse(), ignore_unknown_fields=True)

    async def streaming_chat(
        self,
        agent: str,
        request: agent_pb2.ChatRequest,
        metadata: Mapping[str, str] | None,
        timeout: float | None,
    ) -> AsyncIterator[agent_pb2.ChatResponse]:
        body = json_format.MessageToDict(request, preserving_proto_field_name=True)
        headers = self._headers(metadata, timeout)
        url = self._url(agent, "streaming_chat")
        try:
            # aiohttp's own timeout, not asyncio.timeout: this generator runs in the
            # consumer's task, which asyncio.timeout would cancel wherever it happens to be.
            post = self._client().post(url, json=body, headers=headers, timeout=_timeout(timeout))
            async with post as response:
                if response.status != 200:
                    raise await self._status_error(response, agent)
                buffer = b""
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield self._parse_line(line, agent)
                if buffer.strip():
                    yield self._parse_line(buffer, agent)
        except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as error:
            raise self._transport_error(error, agent, timeout) from None

    @staticmethod
    def _parse_line(line: bytes, agent: str) -> agent_pb2.ChatResponse:
        item = json.loads(line.decode("utf-8"))
        if not isinstance(item, dict):
            raise error_for(Code.INTERNAL, "the server streamed a line that is not a JSON object", agent=agent)
        if "error" in item:
            raise _status_body_error(item["error"], Code.UNKNOWN, agent)
        return json_format.ParseDict(item, agent_pb2.ChatResponse(), ignore_unknown_fields=True)

    async def _status_error(self, response: aiohttp.ClientResponse, agent: str | None) -> ClientError:
        fallback = code_for_http_status(response.status)
        text = await response.text(errors="replace")
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body = body["error"]  # the in-stream form, should a server use it up front
        if isinstance(body, dict) and ("message" in body or "code" in body):
            return _status_body_error(body, fallback, agent)
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            message = body["error"]  # upstream neuro-san's {"error": "..."}
        elif fallback is Code.NOT_FOUND and agent is not None:
            message = f"agent {agent!r} is not served at {self.base_url}"
        else:
            message = f"HTTP {response.status} {response.reason or ''} from {response.url}".strip()
        return error_for(fallback, message, agent=agent)

    def _transport_error(self, error: Exception, agent: str | None, timeout: float | None) -> ClientError:
        if isinstance(error, TimeoutError):
            return DeadlineExceeded(f"no complete answer from {self.base_url} within {timeout} s", agent=agent)
        if isinstance(error, json.JSONDecodeError):
            return error_for(Code.INTERNAL, f"{self.base_url} sent JSON that cannot be read: {error}", agent=agent)
        if isinstance(error, aiohttp.ClientConnectorError):
            return Unavailable(f"cannot reach the HTTP server at {self.base_url}: {error.os_error}", agent=agent)
        return Unavailable(f"HTTP connection to {self.base_url} failed: {error or type(error).__name__}", agent=agent)

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


def _timeout(seconds: float | None) -> aiohttp.ClientTimeout:
    """A per-call total timeout; by default none (a chat may stream for minutes), only a connect one."""
    return aiohttp.ClientTimeout(total=seconds, sock_connect=30)


def _status_body_error(body: Any, fallback: Code, agent: str | None) -> ClientError:
    if not isinstance(body, dict):
        return error_for(fallback, str(body), agent=agent)
    code = body.get("code", fallback)
    if not isinstance(code, int):
        code = Code[code] if isinstance(code, str) and code in Code.__members__ else fallback
    details = [d for d in body.get("details") or [] if isinstance(d, dict)]
    return error_for(code, str(body.get("message") or Code(code).name), details, agent)
