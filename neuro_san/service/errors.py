"""Turning core errors into gRPC statuses, in one place.

The status carries the error's code and message, plus a ``google.rpc.Status`` in the
``grpc-status-details-bin`` trailer with an ``ErrorInfo`` (reason, domain) and, for a
bad field, a ``BadRequest`` violation, so the gateway and rich clients can use them.
"""

from __future__ import annotations

import logging

import grpc
from google.rpc import error_details_pb2, status_pb2

from neuro_san.core.errors import Code, InvalidRequest, NeuroSanError

log = logging.getLogger(__name__)

DOMAIN = "neuro-san"
_STATUS_CODES = {sc.value[0]: sc for sc in grpc.StatusCode}


def status_code(code: Code | int) -> grpc.StatusCode:
    return _STATUS_CODES.get(int(code), grpc.StatusCode.UNKNOWN)


def details_trailer(error: NeuroSanError) -> tuple[tuple[str, bytes], ...]:
    status = status_pb2.Status(code=int(error.code), message=error.message)
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN))
    if isinstance(error, InvalidRequest) and error.field:
        violation = error_details_pb2.BadRequest.FieldViolation(field=error.field, description=error.message)
        status.details.add().Pack(error_details_pb2.BadRequest(field_violations=[violation]))
    return (("grpc-status-details-bin", status.SerializeToString()),)


async def abort_with(
    context: grpc.aio.ServicerContext, error: BaseException, trailer: tuple[tuple[str, str | bytes], ...] = ()
) -> None:
    """Abort the call for ``error`` (always raises); ``trailer``: trailing metadata the call
    ends with whatever the error (its request id)."""
    if isinstance(error, NeuroSanError):
        trailer += details_trailer(error)
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:  # rate limits: when a retry can succeed (HTTP Retry-After)
            trailer += (("retry-after", str(retry_after)),)
        context.set_trailing_metadata(trailer)
        await context.abort(status_code(error.code), error.message)
    log.error("unexpected error while serving a call", exc_info=error)
    if trailer:
        context.set_trailing_metadata(trailer)
    await context.abort(grpc.StatusCode.INTERNAL, "internal error; the server log has the details")
