"""The gateway as deployed: ``start_gateway`` with its config, a dead or draining
upstream, and the standalone ``neuro-san gateway`` in front of two server processes."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from gateway import GatewayConfig, start_gateway
from tests.gateway_http_support import PROBE_ARGS, Reply, assert_status, call, chat, wait_for
from tests.support.servers import ROOT, ServerProcess, free_port, start_server


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deploy-markers")


@pytest.fixture(scope="module")
def upstream(markers: Path) -> Iterator[ServerProcess]:
    """A gRPC-only server; the gateways under test are started by the tests."""
    with start_server(env={"GATEWAY_TEST_MARKER_DIR": str(markers)}, extra_args=PROBE_ARGS) as server:
        yield server


async def _request(
    session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any
) -> tuple[int, dict[str, str], bytes]:
    async with session.request(method, url, **kwargs) as response:
        return response.status, dict(response.headers), await response.read()


def test_cors_allow_list_and_preflight(upstream: ServerProcess) -> None:
    async def scenario() -> None:
        config = GatewayConfig(cors_origins=("http://ui.example",))
        handle = await start_gateway(upstream.grpc_target, "127.0.0.1", 0, config)
        base = f"http://127.0.0.1:{handle.port}"
        try:
            async with aiohttp.ClientSession() as session:
                status, headers, _ = await _request(
                    session, "OPTIONS", f"{base}/api/v1/echo/streaming_chat",
                    headers={"Origin": "http://ui.example", "Access-Control-Request-Method": "POST",
                             "Access-Control-Request-Headers": "content-type,authorization"},
                )
                assert status == 204
                assert headers["Access-Control-Allow-Origin"] == "http://ui.example"
                assert headers["Access-Control-Allow-Methods"] == "POST, OPTIONS"
                assert headers["Access-Control-Allow-Headers"] == "content-type,authorization"
                status, headers, _ = await _request(
                    session, "GET", f"{base}/api/v1/list", headers={"Origin": "http://ui.example"}
                )
                assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://ui.example"
                status, headers, _ = await _request(
                    session, "POST", f"{base}/api/v1/echo/streaming_chat",
                    json={"user_message": {"text": "x"}}, headers={"Origin": "http://ui.example"},
                )
                assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://ui.example"
                status, headers, _ = await _request(
                    session, "GET", f"{base}/api/v1/list", headers={"Origin": "http://evil.example"}
                )
                assert status == 200 and "Access-Control-Allow-Origin" not in headers
        finally:
            await handle.stop()

    asyncio.run(scenario())


def test_config_limits_and_a_shared_channel(upstream: ServerProcess) -> None:
    async def scenario() -> None:
        channel = grpc.aio.insecure_channel(upstream.grpc_target)
        config = GatewayConfig(max_body_bytes=1024, max_timeout_seconds=0.5)
        handle = await start_gateway(channel, "127.0.0.1", 0, config)
        base = f"http://127.0.0.1:{handle.port}"
        try:
            async with aiohttp.ClientSession() as session:
                chat_url = f"{base}/api/v1/probe/streaming_chat"
                status, _, body = await _request(session, "POST", chat_url, json={"user_message": {"text": "y" * 2000}})
                assert status == 413 and b'"code":3' in body
                # No Grpc-Timeout: the configured maximum is the deadline; a larger one is capped.
                for headers in ({}, {"Grpc-Timeout": "1H"}):
                    status, _, body = await _request(
                        session, "POST", chat_url, json={"user_message": {"text": "slow:cap"}}, headers=headers
                    )
                    assert status == 504 and b'"code":4' in body
                status, _, body = await _request(session, "GET", f"{base}/api/v1/echo/function")
                assert status == 200 and b"I repeat what you tell me." in body
        finally:
            await handle.stop()
        # The channel was the caller's: still usable after the gateway stopped.
        assert channel.get_state() is not grpc.ChannelConnectivity.SHUTDOWN
        await channel.close()

    asyncio.run(scenario())


def test_sse_heartbeat_on_a_quiet_stream(upstream: ServerProcess) -> None:
    async def scenario() -> None:
        handle = await start_gateway(upstream.grpc_target, "127.0.0.1", 0, GatewayConfig(keepalive_seconds=0.2))
        try:
            async with aiohttp.ClientSession() as session:
                status, headers, body = await _request(
                    session, "POST", f"http://127.0.0.1:{handle.port}/api/v1/probe/streaming_chat",
                    json={"user_message": {"text": "slow:beat"}, "chat_filter": {"chat_filter_type": 2}},
                    headers={"Accept": "text/event-stream", "Grpc-Timeout": "1S"},
                )
            assert status == 200 and headers["Content-Type"] == "text/event-stream"
            frames = body.decode().split("\n\n")
            assert frames.count(": keep-alive") >= 2, frames
            assert frames[-2].startswith("event: error\n")
        finally:
            await handle.stop()

    asyncio.run(scenario())


def test_unreachable_upstream_is_503() -> None:
    async def scenario() -> None:
        handle = await start_gateway(f"127.0.0.1:{free_port()}", "127.0.0.1", 0)
        base = f"http://127.0.0.1:{handle.port}"
        try:
            async with aiohttp.ClientSession() as session:
                for path in ("/api/v1/list", "/api/v1/echo/function"):
                    status, _, body = await _request(session, "GET", base + path)
                    assert status == 503 and b'"code":14' in body, body
                for path in ("/readyz", "/livez"):
                    status, _, _ = await _request(session, "GET", base + path)
                    assert status == 503
        finally:
            await handle.stop()

    asyncio.run(scenario())


def test_draining_server_answers_503(markers: Path) -> None:
    env = {"GATEWAY_TEST_MARKER_DIR": str(markers)}
    with start_server(http=True, env=env, extra_args=[*PROBE_ARGS, "--grace", "4"]) as server:
        port = server.http_port
        in_flight: list[Reply] = []
        worker = threading.Thread(target=lambda: in_flight.append(chat(port, "probe", "slow:drain")))
        worker.start()
        assert wait_for(lambda: (markers / "started-drain").exists())
        server.process.send_signal(signal.SIGTERM)
        assert wait_for(lambda: call(port, "GET", "/readyz").status == 503, timeout=3.0)
        assert_status(call(port, "GET", "/api/v1/echo/function"), 503, 14)
        worker.join(15)
        assert in_flight and in_flight[0].status in (200, 503), in_flight


def test_server_at_its_concurrency_cap_is_503(markers: Path) -> None:
    env = {"GATEWAY_TEST_MARKER_DIR": str(markers), "AGENT_MAX_CONCURRENT_REQUESTS": "1"}
    with start_server(http=True, env=env, extra_args=PROBE_ARGS) as server:
        port = server.http_port
        worker = threading.Thread(target=lambda: chat(port, "probe", "slow:cap1", **{"Grpc-Timeout": "3S"}))
        worker.start()
        assert wait_for(lambda: (markers / "started-cap1").exists())
        status = assert_status(chat(port, "echo", "hi"), 503, 8)
        assert any(d.get("reason") == "TOO_MANY_REQUESTS" for d in status["details"]), status
        worker.join(10)


def test_standalone_gateway_round_robins_over_two_servers() -> None:
    with start_server() as plain, start_server(extra_args=PROBE_ARGS) as with_probe:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "neuro_san.cli.main", "gateway", "--target",
             f"{plain.grpc_target},localhost:{with_probe.grpc_port}", "--port", str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        )
        try:
            assert wait_for(lambda: _ready(port), timeout=15), process.stdout
            seen = set()
            for _ in range(8):
                reply = call(port, "GET", "/api/v1/list")
                assert reply.status == 200
                seen.add(tuple(a["agent_name"] for a in reply.json()["agents"]))
            assert len(seen) == 2  # both replicas answered
            assert chat(port, "deep/math_guy", "2 + 3").lines()[-1]["response"]["text"]
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0


def _ready(port: int) -> bool:
    try:
        return call(port, "GET", "/readyz", timeout=2).status == 200
    except OSError:
        return False
