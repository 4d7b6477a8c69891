"""Signed A2A push notifications on one server in memory mode (no Redis): a real webhook
receiver checks each notification's JWT with the JWKS the server publishes (signature,
audience, body hash, task id); a key file that cannot sign stops the server at start."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from a2a.types import SendMessageConfiguration, SendMessageRequest, TaskPushNotificationConfig
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.a2a_support import a2a_client, user_message
from tests.support.servers import ServerProcess, launch, start_server

pytestmark = pytest.mark.slow  # starts servers: out of make test-fast


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    key = ec.generate_private_key(ec.SECP256R1())
    path: Path = tmp_path_factory.mktemp("keys") / "push.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    env = {"AGENT_A2A_PUSH_SIGNING_KEY_FILE": str(path), "AGENT_A2A_PUSH_ALLOWED_NETWORKS": "127.0.0.1/32"}
    with start_server(env=env, http=True) as server:
        yield server


def test_each_notification_carries_a_jwt_the_jwks_verifies(signed: ServerProcess) -> None:
    received: list[tuple[bytes, dict[str, str]]] = []
    completed = asyncio.Event()  # the last notification (the task completed) has arrived

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        received.append((body, dict(request.headers)))
        if b"TASK_STATE_COMPLETED" in body:
            completed.set()
        return web.Response(status=204)

    async def scenario() -> str:
        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}/hook"
        try:
            async with a2a_client(f"{signed.http_base}/a2a/hello_world", streaming=False) as client:
                config = SendMessageConfiguration(task_push_notification_config=TaskPushNotificationConfig(url=url))
                [_ async for _ in client.send_message(SendMessageRequest(message=user_message("hi"),
                                                                         configuration=config))]
            await asyncio.wait_for(completed.wait(), 10)
        finally:
            await runner.cleanup()
        return url

    url = asyncio.run(scenario())
    assert received, "no notification arrived"
    jwks = httpx.get(f"{signed.http_base}/.well-known/jwks.json", timeout=10).json()
    keys = {k["kid"]: jwt.PyJWK(k) for k in jwks["keys"]}
    for body, headers in received:
        token = headers["Authorization"].removeprefix("Bearer ")
        kid = jwt.get_unverified_header(token)["kid"]
        claims: dict[str, Any] = jwt.decode(token, keys[kid], algorithms=["ES256"], audience=url)
        assert claims["request_body_sha256"] == hashlib.sha256(body).hexdigest()
        event = json.loads(body)
        task_id = (event.get("task") or event.get("statusUpdate") or event.get("artifactUpdate"))
        assert claims["task_id"] in (task_id.get("id"), task_id.get("taskId"))
        with pytest.raises(jwt.InvalidAudienceError):  # not valid for another receiver
            jwt.decode(token, keys[kid], algorithms=["ES256"], audience="http://elsewhere/hook")


def test_a_key_that_cannot_sign_stops_the_server_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    try:
        server = launch(env={"AGENT_A2A_PUSH_SIGNING_KEY_FILE": str(bad)}, http=True)
    except RuntimeError as error:  # it exited before launch() looked
        said = str(error)
    else:  # its output ended first: it is exiting
        assert server.process.wait(15) == 2
        said = server.log()
    assert "AGENT_A2A_PUSH_SIGNING_KEY_FILE: not an unencrypted PEM private key" in said
