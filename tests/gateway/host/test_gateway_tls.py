"""HTTPS and mutual TLS on the gateway, and the standalone gateway over TLS (and mTLS)
to a TLS gRPC server, all with a throwaway CA. Also: a 401 names its scheme."""

from __future__ import annotations

import http.client
import json
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import trustme

from tests.gateway_http_support import Reply, wait_for
from tests.support import grpc_calls as calls
from tests.support.servers import ROOT, free_port, start_server

CHAT = "/api/v1/echo/streaming_chat"


@dataclass
class Pki:
    """PEM files of a throwaway CA, a server certificate and a client certificate."""

    ca: Path
    server_chain: Path
    server_key: Path
    client_chain: Path
    client_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    files = Pki(*(folder / name for name in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")))
    ca.cert_pem.write_to_path(files.ca)
    for cert, chain, key in (
        (ca.issue_cert("127.0.0.1", "localhost"), files.server_chain, files.server_key),
        (ca.issue_cert("client@example.test"), files.client_chain, files.client_key),
    ):
        chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
        cert.private_key_pem.write_to_path(key)
    return files


def client_context(pki: Pki, with_cert: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if with_cert:
        context.load_cert_chain(str(pki.client_chain), str(pki.client_key))
    return context


def https(
    port: int,
    context: ssl.SSLContext,
    method: str,
    path: str,
    body: dict[str, object] | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=20)
    try:
        raw = json.dumps(body).encode() if body is not None else None
        connection.request(method, path, body=raw, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


def plain_http_fails(port: int) -> bool:
    """A plaintext request to an HTTPS port gets no HTTP answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/api/v1/list")
        return connection.getresponse().status >= 400
    except (OSError, http.client.HTTPException):
        return True
    finally:
        connection.close()


def chat_text(reply: Reply) -> str:
    assert reply.status == 200, reply.body
    return str(reply.lines()[-1]["response"]["text"])


def test_serve_https_reuses_the_grpc_certificate(pki: Pki) -> None:
    args = ["--tls-cert", str(pki.server_chain), "--tls-key", str(pki.server_key)]
    with start_server(http=True, extra_args=args) as server:
        trusted = client_context(pki, with_cert=False)
        assert https(server.http_port, trusted, "GET", "/api/v1/list").status == 200
        assert chat_text(https(server.http_port, trusted, "POST", CHAT, {"user_message": {"text": "over https"}})) \
            == "over https"
        assert https(server.http_port, trusted, "GET", "/readyz").status == 200
        assert plain_http_fails(server.http_port)
        # A client that does not trust the CA refuses the server.
        with pytest.raises(ssl.SSLError):
            https(server.http_port, ssl.create_default_context(), "GET", "/api/v1/list")
        # gRPC is on TLS too.
        credentials = grpc.ssl_channel_credentials(root_certificates=pki.ca.read_bytes())
        with grpc.secure_channel(server.grpc_target, credentials) as channel:
            assert calls.function(channel, "echo").function.description


def test_serve_mutual_tls_on_http_only_with_api_keys(pki: Pki) -> None:
    """--http-tls-* flags (client CA from the environment): HTTPS with mTLS, gRPC stays plain."""
    args = ["--http-tls-cert", str(pki.server_chain), "--http-tls-key", str(pki.server_key)]
    env = {"AGENT_HTTP_TLS_CLIENT_CA_FILE": str(pki.ca), "AGENT_API_KEYS": "the-key"}
    with start_server(http=True, extra_args=args, env=env) as server:
        port = server.http_port
        with_cert = client_context(pki, with_cert=True)
        authorized = {"Authorization": "Bearer the-key"}
        assert https(port, with_cert, "GET", "/api/v1/echo/function", headers=authorized).status == 200
        denied = https(port, with_cert, "GET", "/api/v1/echo/function")
        assert denied.status == 401 and denied.headers["WWW-Authenticate"] == "Bearer"
        streaming_denied = https(port, with_cert, "POST", CHAT, {"user_message": {"text": "x"}})
        assert streaming_denied.status == 401 and streaming_denied.headers["WWW-Authenticate"] == "Bearer"
        assert "WWW-Authenticate" not in https(port, with_cert, "GET", "/readyz").headers
        # No client certificate: the handshake (or the first read) fails.
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            https(port, client_context(pki, with_cert=False), "GET", "/api/v1/list", headers=authorized)
        with grpc.insecure_channel(server.grpc_target) as channel:  # plaintext gRPC answers (with its own 401)
            with pytest.raises(grpc.RpcError) as info:
                calls.function(channel, "echo")
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


@contextmanager
def standalone_gateway(target: str, pki: Pki, *extra: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``neuro-san gateway`` serving HTTPS (server cert from ``pki``) in front of ``target``."""
    port = free_port()
    command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target", target, "--port", str(port),
               "--http-tls-cert", str(pki.server_chain), "--http-tls-key", str(pki.server_key), *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    trusted = client_context(pki, with_cert=False)

    def answers() -> bool:
        try:
            return https(port, trusted, "GET", "/livez").status in (200, 503)
        except OSError:
            return process.poll() is not None

    try:
        assert wait_for(answers, timeout=15) and process.poll() is None, process.stdout
        yield port, process
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


def test_standalone_gateway_over_tls_to_a_tls_grpc_server(pki: Pki) -> None:
    args = ["--tls-cert", str(pki.server_chain), "--tls-key", str(pki.server_key)]
    trusted = client_context(pki, with_cert=False)
    with start_server(extra_args=args) as server:
        with standalone_gateway(server.grpc_target, pki, "--target-ca", str(pki.ca)) as (port, _):
            assert https(port, trusted, "GET", "/readyz").status == 200
            assert chat_text(https(port, trusted, "POST", CHAT, {"user_message": {"text": "tls both ways"}})) \
                == "tls both ways"
        # Plaintext to a TLS server: not ready, and calls are 503.
        with standalone_gateway(server.grpc_target, pki) as (port, _):
            assert https(port, trusted, "GET", "/readyz").status == 503
            assert https(port, trusted, "GET", "/api/v1/list").status == 503


def test_standalone_gateway_with_a_client_certificate_to_an_mtls_grpc_server(pki: Pki) -> None:
    args = ["--tls-cert", str(pki.server_chain), "--tls-key", str(pki.server_key), "--tls-client-ca", str(pki.ca)]
    trusted = client_context(pki, with_cert=False)
    with start_server(extra_args=args) as server:
        client_cert = ["--target-ca", str(pki.ca), "--target-cert", str(pki.client_chain),
                       "--target-key", str(pki.client_key)]
        with standalone_gateway(server.grpc_target, pki, *client_cert) as (port, _):
            assert https(port, trusted, "GET", "/readyz").status == 200
            assert https(port, trusted, "GET", "/api/v1/list").status == 200
        # The server wants a client certificate the gateway does not present.
        with standalone_gateway(server.grpc_target, pki, "--target-ca", str(pki.ca)) as (port, _):
            assert https(port, trusted, "GET", "/api/v1/list").status == 503


def test_half_a_tls_pair_is_a_start_up_error(pki: Pki) -> None:
    command = [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--port", str(free_port()),
               "--http-tls-cert", str(pki.server_chain)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "certificate and a key" in result.stdout + result.stderr
