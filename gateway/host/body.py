"""The one guarded way a request body is read on the HTTP port.

The host calls :func:`read_guarded_body` for every route that takes a body, before the
front-end's handler runs; no front-end reads a request by itself. So every route of
every front-end, including one added later, gets the same guards: a declared length over
the limit is 413 before a byte is read, a body that grows past it is 413, and a client
that stalls mid-body (slowloris) is 408 after ``per_read_seconds`` and its connection is
closed; a body aiohttp cannot decode (a broken ``Content-Encoding`` or chunked framing) is
400. Refusals are :class:`~gateway.host.errors.GatewayError`\\ s, which the route's
renderer phrases for its protocol.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from gateway.host.client_errors import is_malformed_http, malformed_reason
from gateway.host.errors import GatewayError
from neuro_san.core.errors import Code


async def read_guarded_body(
    request: web.BaseRequest, per_read_seconds: float, limit: int, total_seconds: float | None = None
) -> bytes:
    """The request body, each read bounded by ``per_read_seconds`` and the whole body by
    ``total_seconds`` (a client trickling one byte per read would pass the per-read
    deadline forever), at most ``limit`` bytes."""
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    loop = asyncio.get_running_loop()
    ends = None if total_seconds is None else loop.time() + total_seconds
    while True:
        timeout = per_read_seconds if ends is None else min(per_read_seconds, ends - loop.time())
        try:
            if timeout <= 0:
                raise TimeoutError
            async with asyncio.timeout(timeout):
                chunk = await request.content.readany()
        except TimeoutError:
            # The rest of the body may still come: the connection cannot carry another
            # request, so it closes once the answer is written.
            request.protocol.close()
            raise GatewayError(
                Code.DEADLINE_EXCEEDED,
                (
                    f"the request body took longer than {total_seconds:g} s; send it at once"
                    if ends is not None and loop.time() >= ends
                    else f"the request body stalled for {per_read_seconds:g} s; send it without pauses"
                ),
                status=408,
                headers={"Connection": "close"},
            ) from None
        except web.HTTPRequestEntityTooLarge:  # aiohttp's own cap (client_max_size)
            raise too_large(limit) from None
        except Exception as error:
            if not is_malformed_http(error):
                raise
            # A body aiohttp cannot decode (bad gzip, broken chunks): the client's, and the
            # rest of the stream cannot be framed.
            request.protocol.close()
            raise GatewayError(
                Code.INVALID_ARGUMENT, f"the request body could not be read: {malformed_reason(error)}",
                status=400, headers={"Connection": "close"},
            ) from None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)


def too_large(limit: int) -> GatewayError:
    return GatewayError(Code.INVALID_ARGUMENT, f"request body is larger than {limit} bytes", status=413)
