"""The HTTP edge of every LLM adapter: shared sessions, retries, and error translation.

Every provider adapter sends one JSON POST per model turn through :meth:`HttpPool.post_json`.
Doing that in one place gives three guarantees the adapters need not repeat:

- **Shared connections.** One ``aiohttp.ClientSession`` per (provider, base URL), created
  lazily on the running loop and reused by every request, so TLS handshakes and
  keep-alive connections are amortised across agents and chats.
- **Retries.** 429, 5xx and connection failures are retried with exponential backoff and
  full jitter, honouring ``Retry-After`` (see :mod:`neuro_san.llm.retry`), never more than
  ``max_attempts`` attempts in total. Timeouts apply per attempt and are *not* retried: a
  provider that stalled for the whole timeout is unlikely to answer the next attempt
  sooner, and the chat's own deadline is the better judge of how long to keep trying.
- **One error vocabulary.** Whatever went wrong leaves as a :mod:`neuro_san.llm.errors`
  exception, translated exactly once, here (a status's meaning:
  :mod:`neuro_san.llm.errors`). Messages never contain API keys (secret
  header values are scrubbed from provider excerpts) and logs never contain request
  bodies (they hold user text) or headers.

Cancellation is never caught: a cancelled request makes aiohttp close its connection, so
a client that goes away stops the provider's work (and the spend) at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit
from urllib.request import getproxies_environment, proxy_bypass

import aiohttp
from yarl import URL

from neuro_san.llm.errors import (
    LlmConnectionError,
    LlmError,
    LlmMalformedReply,
    LlmTimeout,
    excerpt_text,
    http_failure,
)
from neuro_san.llm.retry import RETRYABLE_STATUSES, RetryPolicy, parse_retry_after

logger = logging.getLogger(__name__)

#: Open connections per session (per provider and base URL), so at most this many LLM
#: calls are in flight to one endpoint at a time; the others wait for a connection.
#: A chat waits on its LLM call, so this bounds concurrent chats per endpoint: it must be
#: well above the concurrency the server is meant to carry (AGENT_LLM_MAX_CONNECTIONS).
DEFAULT_CONNECTION_LIMIT = 4096

#: Request headers whose values are secrets and must never appear in messages.
SECRET_HEADERS: frozenset[str] = frozenset(
    {"authorization", "x-api-key", "api-key", "x-goog-api-key", "x-amz-security-token"}
)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: the part connections are pooled by."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def redact_url(url: str) -> str:
    """``url`` without its query string, which some gateways use for keys."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


#: Reads a successful reply's body into the reply object (a streamed reply's pieces
#: assembled); raises an LlmError when the reply is not one.
ReplyReader = Callable[[aiohttp.ClientResponse], Awaitable[dict[str, Any]]]


class RequestSigner(Protocol):
    """Adds per-attempt headers computed over the exact request (AWS SigV4)."""

    def sign(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Awaitable[dict[str, str]]:
        """The headers to add (``Authorization``, dates, tokens…)."""
        ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how one configured model is called: the provider layer's output.

    The wire-protocol adapters (chat completions, messages) take an Endpoint and never
    look at environment variables or config keys themselves.
    """

    #: Short provider name: ``openai``, ``azure-openai``, ``ollama``, ``anthropic``.
    provider: str
    #: The full URL posted to.
    url: str
    #: The configured base URL, which keys the shared session.
    base_url: str
    #: Headers sent with every request, auth included (hidden from repr).
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: Where the API key comes from, for the message of a 401/403.
    key_source: str = ""
    #: Seconds allowed for each attempt.
    timeout: float = 120.0
    #: Total attempts, the first one included.
    max_attempts: int = 3
    #: Signs each attempt (Bedrock); None for providers that take a static key header.
    signer: RequestSigner | None = field(default=None, repr=False, compare=False)


class HttpPool:
    """Shared HTTP sessions for LLM providers, with retrying JSON POSTs.

    One pool serves the whole process (the model factory owns it); call :meth:`aclose`
    on shutdown. Sessions belong to the loop they were created on: a pool used from a
    new loop (tests running ``asyncio.run`` repeatedly) makes fresh sessions there.
    """

    def __init__(
        self,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        retry_after_cap: float = 30.0,
        connection_limit: int = DEFAULT_CONNECTION_LIMIT,
        rng: random.Random | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self._backoff = RetryPolicy(backoff_base=backoff_base, backoff_cap=backoff_cap, retry_after_cap=retry_after_cap)
        self._connection_limit = connection_limit
        self._rng = rng or random.Random()
        #: Called with the provider's name before each retry (metrics).
        self._on_retry = on_retry
        self._sessions: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession]] = {}
        #: The proxy (or None) for each session's base URL, read from the environment once.
        self._proxies: dict[tuple[str, str], str | None] = {}

    @property
    def session_count(self) -> int:
        """How many sessions are open (for tests and metrics)."""
        return sum(1 for _, session in self._sessions.values() if not session.closed)

    def session(self, provider: str, base_url: str) -> aiohttp.ClientSession:
        """The shared session for ``(provider, base_url)``, created on first use.

        Must be called from a coroutine (it binds the session to the running loop).
        """
        loop = asyncio.get_running_loop()
        key = (provider, base_url)
        entry = self._sessions.get(key)
        if entry is not None and entry[0] is loop and not entry[1].closed:
            return entry[1]
        # A session from a finished loop cannot be closed from here; dropping it is all
        # that is left to do.
        connector = aiohttp.TCPConnector(limit=self._connection_limit)
        # Not trust_env: with it aiohttp re-reads the proxy variables and ~/.netrc in a
        # worker thread on *every* request (two thread hops per LLM call, ~10% of the
        # server's CPU under load). The proxy is resolved once per session instead.
        session = aiohttp.ClientSession(connector=connector)
        self._sessions[key] = (loop, session)
        self._proxies[key] = env_proxy_for(base_url)
        return session

    async def aclose(self) -> None:
        """Close every session that belongs to the running loop."""
        loop = asyncio.get_running_loop()
        entries, self._sessions = list(self._sessions.values()), {}
        for session_loop, session in entries:
            if session_loop is loop and not session.closed:
                await session.close()

    async def post(
        self,
        endpoint: Endpoint,
        payload: Mapping[str, Any],
        *,
        target: str = "",
        read: ReplyReader | None = None,
    ) -> dict[str, Any]:
        """:meth:`post_json` to ``endpoint`` with its headers, timeout and attempts."""
        return await self.post_json(
            endpoint.url,
            endpoint.headers,
            payload,
            timeout=endpoint.timeout,
            max_attempts=endpoint.max_attempts,
            provider=endpoint.provider,
            base_url=endpoint.base_url,
            key_source=endpoint.key_source,
            target=target,
            signer=endpoint.signer,
            read=read,
        )

    async def post_json(
        self,
        url: str,
        headers: Mapping[str, str],
        payload: Mapping[str, Any],
        *,
        # Per attempt, so asyncio.timeout around the call could not express it.
        timeout: float,  # noqa: ASYNC109
        max_attempts: int,
        provider: str,
        base_url: str | None = None,
        key_source: str = "",
        target: str = "",
        signer: RequestSigner | None = None,
        read: ReplyReader | None = None,
    ) -> dict[str, Any]:
        """POST ``payload`` as JSON and return the decoded JSON object of the reply.

        Args:
            url: the full endpoint URL.
            headers: request headers, including the provider's auth header.
            payload: the JSON body.
            timeout: seconds allowed for each attempt (connect, send, and read the reply).
            max_attempts: total attempts, first one included (at least 1).
            provider: short provider name, used in messages, logs and the session key.
            base_url: the configured base the session is keyed by (default: the URL's origin).
            key_source: where the API key comes from, for the 401/403 message
                (for example ``"OPENAI_API_KEY (or llm_config 'openai_api_key')"``).
            target: what was asked for, for the 404 message (for example a model name).
            signer: signs every attempt over the exact body bytes (AWS SigV4).
            read: reads a successful (2xx) reply instead of decoding it as one JSON
                object: a streamed reply (:mod:`neuro_san.llm.streams.framing`). Whatever it
                raises ends the call: no retry once a reply has begun (its pieces may
                already have reached the client).

        Raises:
            LlmError: one of its subclasses, as listed in :mod:`neuro_san.llm.errors`.
        """
        key = (provider, base_url or origin_of(url))
        session = self.session(*key)
        proxy = self._proxies.get(key)
        secrets = [v for k, v in headers.items() if k.lower() in SECRET_HEADERS and v]
        attempts = max(1, max_attempts)
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        where = redact_url(url)
        # Sent exactly as built: yarl would otherwise decode a model id's %3A to ":", and
        # a SigV4 signature covers the path as sent.
        target_url = URL(url, encoded=True)
        # Serialised once: a signature covers these exact bytes.
        data = json.dumps(payload, ensure_ascii=False).encode()
        base_headers = {"Content-Type": "application/json", **headers}
        for attempt in range(1, attempts + 1):
            failure: LlmError
            send_headers = base_headers
            if signer is not None:
                # Per attempt: a signature carries its time and expires.
                send_headers = {**base_headers, **await signer.sign("POST", url, base_headers, data)}
            try:
                async with session.post(
                    target_url, data=data, headers=send_headers, timeout=client_timeout, proxy=proxy
                ) as response:
                    status = response.status
                    if read is not None and 200 <= status < 300:
                        return await read(response)
                    body = await response.read()
                    retry_after = parse_retry_after(response.headers)
                    content_type = response.headers.get("content-type", "")
            except TimeoutError as error:
                raise LlmTimeout(f"no reply from {where} within {timeout:g}s", provider) from error
            except aiohttp.ClientError as error:
                # Refused or dropped connections, truncated bodies, and replies that are not
                # HTTP at all: all "could not talk to the provider", all worth a retry.
                failure = LlmConnectionError(f"connection to {where} failed: {type(error).__name__}", provider)
                failure.__cause__ = error
                status, retry_after = 0, None
            else:
                if 200 <= status < 300:
                    return _decode_object(body, content_type, where, provider)
                failure = http_failure(status, body, retry_after, secrets, provider, where, key_source, target)
            retryable = status == 0 or status in RETRYABLE_STATUSES
            if not retryable or attempt == attempts:
                raise failure
            if self._on_retry is not None:
                self._on_retry(provider)
            delay = self._backoff.delay(attempt, retry_after, self._rng)
            logger.warning(
                "%s: %s from %s; retrying in %.2fs (attempt %d of %d)",
                provider,
                f"HTTP {status}" if status else "connection failure",
                where,
                delay,
                attempt + 1,
                attempts,
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def env_proxy_for(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``) names for
    ``url``, or None. Read when a session is made, not per request."""
    parts = urlsplit(url)
    proxy = getproxies_environment().get(parts.scheme)
    if not proxy or proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def _decode_object(body: bytes, content_type: str, where: str, provider: str) -> dict[str, Any]:
    """The JSON object in a success reply, or LlmMalformedReply."""
    try:
        decoded = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LlmMalformedReply(
            f"reply from {where} is not JSON (content-type {content_type or 'missing'!r}): {excerpt_text(body, [])!r}",
            provider,
        ) from error
    if not isinstance(decoded, dict):
        raise LlmMalformedReply(f"reply from {where} is JSON but not an object: {type(decoded).__name__}", provider)
    return decoded
