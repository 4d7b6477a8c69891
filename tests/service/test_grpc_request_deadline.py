"""A gRPC call whose request message never arrives is ended (AGENT_GRPC_REQUEST_TIMEOUT_SECONDS,
neuro_san/service/request_deadline.py).

A raw HTTP/2 client (the ``h2`` package, over a plain socket) opens a StreamingChat call,
sends its HEADERS and never its DATA, while answering the server's pings as a live client
does: the server must end the call with DEADLINE_EXCEEDED soon after the deadline. A
normal client's calls, unary and streaming, are served as before.
"""

from __future__ import annotations

import socket
import time

import grpc
import h2.config
import h2.connection
import h2.events
import pytest
from neuro_san.api.grpc import agent_pb2, chat_pb2, concierge_pb2

from gateway.host.connection_guard import ConnectionLimits
from neuro_san.service.grpc_limits import GrpcConnectionLimits
from neuro_san.service.request_deadline import SETTING
from tests.support.servers import ServerProcess, start_server
from tests.support.waits import wait_for_log

#: Takes seconds (starts a server): not in `make test-fast`.
pytestmark = pytest.mark.slow

REQUEST_SECONDS = 1.0
CHAT = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat"
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
LIST = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List"
#: A2A's gRPC binding (gateway/a2a/grpc_binding.py), served on the gRPC port with HTTP on.
A2A_SEND = "/lf.a2a.v1.A2AService/SendMessage"
A2A_STREAM = "/lf.a2a.v1.A2AService/SendStreamingMessage"


def _headers_only(server: ServerProcess, within: float, path: str = CHAT) -> tuple[dict[str, str], float]:
    """Open a call, send no message; the trailers (or reset) the server ends it with, and when."""
    sock = socket.create_connection(("127.0.0.1", server.grpc_port), timeout=within)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    stream = connection.get_next_available_stream_id()
    connection.send_headers(stream, [
        (":method", "POST"), (":scheme", "http"), (":path", path), (":authority", server.grpc_target),
        ("content-type", "application/grpc"), ("te", "trailers"), ("agent-name", "echo"),
    ])
    sock.sendall(connection.data_to_send())
    started = time.monotonic()
    try:
        while time.monotonic() - started < within:
            data = sock.recv(65536)
            if not data:
                return {"closed": "connection"}, time.monotonic() - started
            for event in connection.receive_data(data):  # pings are acknowledged by h2 itself
                if isinstance(event, (h2.events.TrailersReceived, h2.events.ResponseReceived)):
                    headers = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                               for k, v in event.headers}
                    if "grpc-status" in headers:
                        return headers, time.monotonic() - started
                if isinstance(event, h2.events.StreamReset):
                    return {"reset": str(event.error_code)}, time.monotonic() - started
            sock.sendall(connection.data_to_send())
    except TimeoutError:
        pass
    finally:
        sock.close()
    return {}, time.monotonic() - started


def test_a_call_whose_request_never_arrives_is_ended() -> None:
    env = {"AGENT_GRPC_REQUEST_TIMEOUT_SECONDS": str(REQUEST_SECONDS)}
    with start_server(env=env) as server:
        ended, after = _headers_only(server, REQUEST_SECONDS + 5)
        assert ended.get("grpc-status") == str(grpc.StatusCode.DEADLINE_EXCEEDED.value[0]), ended
        assert REQUEST_SECONDS - 0.2 < after < REQUEST_SECONDS + 3
        # The server's line reaches us through a pipe read by another thread: wait for it.
        assert wait_for_log(server, "AGENT_GRPC_REQUEST_TIMEOUT_SECONDS"), server.log()[-3000:]
        # A streaming-request method (reflection): its first message has the same deadline.
        ended, after = _headers_only(server, REQUEST_SECONDS + 5, REFLECTION)
        assert ended.get("grpc-status") == str(grpc.StatusCode.DEADLINE_EXCEEDED.value[0]), ended
        # A client that sends its message is served as ever, streaming and unary.
        with grpc.insecure_channel(server.grpc_target) as channel:
            chat = channel.unary_stream(
                CHAT, agent_pb2.ChatRequest.SerializeToString, agent_pb2.ChatResponse.FromString
            )
            human = chat_pb2.ChatMessage(type=chat_pb2.ChatMessage.HUMAN, text="hi")
            request = agent_pb2.ChatRequest(user_message=human)
            replies = list(chat(request, metadata=[("agent-name", "echo")], timeout=10))
            assert replies and "hi" in replies[-1].response.text
            listing = channel.unary_unary(
                LIST, concierge_pb2.ConciergeRequest.SerializeToString, concierge_pb2.ConciergeResponse.FromString
            )
            agents = listing(concierge_pb2.ConciergeRequest(), timeout=10).agents
            assert any(agent.agent_name == "echo" for agent in agents)
        # (Reflection served as ever: tests/service/test_grpc_service.py lists and describes with grpcurl.)


def test_every_route_of_the_grpc_port_has_the_deadline() -> None:
    """Unary-request methods of every kind: a unary answer (ConciergeService/List, A2A's
    SendMessage) and a stream (A2A's SendStreamingMessage), A2A's by the binding the
    composition root adds, twice each (the second call reuses the wrapped handler)."""
    env = {"AGENT_GRPC_REQUEST_TIMEOUT_SECONDS": str(REQUEST_SECONDS)}
    with start_server(env=env, http=True) as server:
        for path in (LIST, A2A_SEND, A2A_STREAM, A2A_SEND):
            ended, after = _headers_only(server, REQUEST_SECONDS + 5, path)
            assert ended.get("grpc-status") == str(grpc.StatusCode.DEADLINE_EXCEEDED.value[0]), (path, ended)
            assert REQUEST_SECONDS - 0.2 < after < REQUEST_SECONDS + 3, path


def test_the_deadline_settings_are_read_and_checked_at_start() -> None:
    assert GrpcConnectionLimits().request_message_seconds == 30
    assert GrpcConnectionLimits.from_env({SETTING: "2.5"}).request_message_seconds == 2.5
    assert ConnectionLimits().write_seconds == 30
    assert ConnectionLimits.from_env({"AGENT_HTTP_WRITE_TIMEOUT_SECONDS": "0"}).write_seconds == 0  # never
    with pytest.raises(ValueError, match=SETTING):
        GrpcConnectionLimits.from_env({SETTING: "soon"})
    with pytest.raises(ValueError, match="must not be negative"):
        ConnectionLimits.from_env({"AGENT_HTTP_WRITE_TIMEOUT_SECONDS": "-1"})
