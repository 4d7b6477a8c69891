"""TLS and mutual TLS on the gRPC port, with a throwaway CA."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import trustme

from tests.support import grpc_calls as calls
from tests.support.servers import start_server


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _server_files(ca: trustme.CA, folder: Path) -> tuple[Path, Path, Path]:
    cert = ca.issue_cert("127.0.0.1", "localhost")
    chain, key, ca_file = folder / "chain.pem", folder / "key.pem", folder / "ca.pem"
    cert.private_key_pem.write_to_path(key)
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    ca.cert_pem.write_to_path(ca_file)
    return chain, key, ca_file


def test_tls(ca: trustme.CA, tmp_path: Path) -> None:
    chain, key, ca_file = _server_files(ca, tmp_path)
    with start_server(extra_args=["--tls-cert", str(chain), "--tls-key", str(key)]) as server:
        credentials = grpc.ssl_channel_credentials(root_certificates=ca_file.read_bytes())
        with grpc.secure_channel(server.grpc_target, credentials) as channel:
            final = calls.streaming_chat(channel, "echo", calls.chat_request("over tls"))[-1].response
            assert final.text == "over tls"
        with grpc.insecure_channel(server.grpc_target) as plain:
            with pytest.raises(grpc.RpcError) as info:
                calls.function(plain, "echo")
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_mutual_tls(ca: trustme.CA, tmp_path: Path) -> None:
    chain, key, ca_file = _server_files(ca, tmp_path)
    args = ["--tls-cert", str(chain), "--tls-key", str(key), "--tls-client-ca", str(ca_file)]
    with start_server(extra_args=args) as server:
        client = ca.issue_cert("client@example.test")
        with_cert = grpc.ssl_channel_credentials(
            root_certificates=ca_file.read_bytes(),
            private_key=client.private_key_pem.bytes(),
            certificate_chain=b"".join(blob.bytes() for blob in client.cert_chain_pems),
        )
        with grpc.secure_channel(server.grpc_target, with_cert) as channel:
            assert calls.function(channel, "echo").function.description
        without_cert = grpc.ssl_channel_credentials(root_certificates=ca_file.read_bytes())
        with grpc.secure_channel(server.grpc_target, without_cert) as channel:
            with pytest.raises(grpc.RpcError) as info:
                calls.function(channel, "echo")
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
