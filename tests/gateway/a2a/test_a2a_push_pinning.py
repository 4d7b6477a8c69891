"""A push notification connects to the address its SSRF check resolved (issue 33 item 7):
the name is looked up once per delivery, and a name that would rebind between the check and
the connect (here: one no system resolver knows) still reaches the checked receiver, which
sees the name in ``Host`` and, over https, as the TLS server name its certificate is checked
for. A real receiver on loopback; the policy's resolver counts lookups."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import pytest
import trustme
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryPushNotificationConfigStore
from a2a.types import Task, TaskPushNotificationConfig, TaskState, TaskStatus
from aiohttp import web

from gateway.a2a.push import RetryingPushSender, pinned_url
from gateway.a2a.push_policy import PushUrlPolicy, Resolved, allowed_networks
from gateway.a2a.tasks import resolve_owner

NAME = "hook.rebinding.invalid"  # .invalid: never resolves anywhere but in the policy's stub


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_delivery_connects_to_the_checked_address_after_one_lookup(scheme: str) -> None:
    asyncio.run(_deliver_once(scheme))


async def _deliver_once(scheme: str) -> None:
    seen: list[str] = []
    server_names: list[str | None] = []
    server_tls: ssl.SSLContext | None = None
    client = None
    if scheme == "https":
        ca = trustme.CA()
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(NAME).configure_cert(server_tls)

        def note_server_name(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
            server_names.append(name)

        server_tls.sni_callback = note_server_name  # type: ignore[assignment]
        client_tls = ssl.create_default_context()
        ca.configure_trust(client_tls)
        client = httpx.AsyncClient(verify=client_tls, timeout=10.0, follow_redirects=False)
    got = asyncio.Event()

    async def hook(request: web.Request) -> web.Response:
        seen.append(request.headers["Host"])
        got.set()
        return web.Response()

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_tls)
    await site.start()
    port = runner.addresses[0][1]
    lookups: list[str] = []

    async def resolver(host: str, port_: int) -> list[str]:
        lookups.append(host)  # the first answer is the receiver; any later one points inside
        return ["127.0.0.1"] if len(lookups) == 1 else ["169.254.169.254"]

    policy = PushUrlPolicy(allowed_networks({"AGENT_A2A_PUSH_ALLOWED_NETWORKS": "127.0.0.1/32"}), resolver)
    store = InMemoryPushNotificationConfigStore(owner_resolver=resolve_owner)
    url = f"{scheme}://{NAME}:{port}/hook"
    await store.set_info("t1", TaskPushNotificationConfig(id="c1", task_id="t1", url=url), ServerCallContext())
    sender = RetryingPushSender(store, policy, client=client)
    try:
        task = Task(id="t1", context_id="ctx", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
        await sender.send_notification("t1", task)
        await asyncio.wait_for(got.wait(), 5)
    finally:
        await sender.close()
        await runner.cleanup()
    assert lookups == [NAME]
    assert seen == [f"{NAME}:{port}"]
    assert server_names == ([NAME] if scheme == "https" else [])


def test_the_pinned_url_names_the_address_and_host_the_name() -> None:
    assert pinned_url(Resolved("https://hook.example/x?a=1", "hook.example", "93.184.215.14")) == (
        "https://93.184.215.14/x?a=1", "hook.example")
    assert pinned_url(Resolved("http://u:p@hook.example:8080", "hook.example", "2606:2800::1")) == (
        "http://u:p@[2606:2800::1]:8080/", "hook.example:8080")
