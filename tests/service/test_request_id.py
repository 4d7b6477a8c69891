
"""Every call answers with a request id (the client's, or a new one) that its log lines carry:
on gRPC in the trailing metadata, with the status; over HTTP as the Grpc-Metadata-Request-Id
header (and X-Request-Id echoed when the client sent that one)."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import grpc
import pytest
from neuro_san.api.grpc import agent_pb2

from tests.support import grpc_calls as calls
from tests.support.servers import start_server

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


def test_request_id_on_grpc_and_http_and_in_the_log() -> None:
    with start_server(http=True, env={"AGENT_SERVICE_LOG_JSON": "1"}) as server:
        with grpc.insecure_channel(server.grpc_target) as channel:
            call = channel.unary_unary(
                calls.path("echo", "Function"),
                request_serializer=agent_pb2.FunctionRequest.SerializeToString,
                response_deserializer=agent_pb2.FunctionResponse.FromString,
            )
            _, rpc = call.with_call(agent_pb2.FunctionRequest(), metadata=[("request_id", "grpc-id-1")], timeout=5)
            assert ("request-id", "grpc-id-1") in rpc.trailing_metadata()
            assert "request-id" not in dict(rpc.initial_metadata())  # with the status, not before
            _, rpc = call.with_call(agent_pb2.FunctionRequest(), metadata=[("x-request-id", "grpc-x-3")], timeout=5)
            assert ("request-id", "grpc-x-3") in rpc.trailing_metadata()
            _, rpc = call.with_call(agent_pb2.FunctionRequest(), timeout=5)
            made_up = dict(rpc.trailing_metadata())["request-id"]
            assert len(made_up) == 16
            with pytest.raises(grpc.RpcError) as failed:
                channel.unary_unary(calls.path(None, "Function"),
                                    request_serializer=agent_pb2.FunctionRequest.SerializeToString)(
                    agent_pb2.FunctionRequest(), metadata=[("agent-name", "nobody"), ("request_id", "grpc-err-4")],
                    timeout=5)
            error = failed.value
            assert error.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
            assert ("request-id", "grpc-err-4") in error.trailing_metadata()  # type: ignore[attr-defined]

        async def http() -> tuple[str, str]:
            async with aiohttp.ClientSession(server.http_base) as session:
                body = {"user_message": {"text": "hi"}}
                async with session.post(
                    "/api/v1/echo/streaming_chat", json=body, headers={"request_id": "http-id-2"}
                ) as response:
                    await response.read()
                    streamed = response.headers["Grpc-Metadata-Request-Id"]
                    assert "X-Request-Id" not in response.headers
                async with session.get("/api/v1/nobody/function") as response:
                    assert response.status == 404
                    failed = response.headers["Grpc-Metadata-Request-Id"]
                async with session.get("/api/v1/echo/function", headers={"X-Request-Id": "http-x-5"}) as response:
                    assert response.status == 200
                    assert response.headers.getall("Grpc-Metadata-Request-Id") == ["http-x-5"]
                    assert response.headers["X-Request-Id"] == "http-x-5"
                    assert "Grpc-Trailer-Request-Id" not in response.headers  # HTTP answers it once
            return streamed, failed

        streamed, failed = asyncio.run(http())
        assert streamed == "http-id-2" and len(failed) == 16
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    by_id = {line.get("request_id"): line for line in lines if line.get("method")}
    assert by_id["grpc-id-1"]["agent"] == "echo" and by_id["grpc-id-1"]["status"] == "OK"
    assert by_id["http-id-2"]["method"] == "StreamingChat"
    assert by_id[failed]["status"] == "NOT_FOUND"
    assert by_id["grpc-x-3"]["agent"] == "echo" and by_id["grpc-err-4"]["status"] == "NOT_FOUND"
    assert by_id["http-x-5"]["method"] == "Function"
