"""The Agent Cards never echo a hostile ``Host`` and are safe to cache (issue 33 item 6):
their URLs come from ``AGENT_HTTP_PUBLIC_URL`` or from a Host that is a plain
``host[:port]`` (else 400); they carry ``Cache-Control``, ``Vary``, an ``ETag`` and answer
``If-None-Match`` with 304 (A2A 1.0 §8.6.1). Against real ``neuro-san serve`` processes;
hostile Hosts are sent on raw sockets, as an attacker would."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from a2a.client import A2ACardResolver

from gateway import GatewayConfig
from gateway.a2a.card_http import CardSettings, none_match
from gateway.composition import protocol_frontends, start_gateway
from gateway.host.allowed_hosts import parse_host
from tests.support.servers import ServerProcess, launch

#: Takes seconds (starts servers): not in `make test-fast`.
pytestmark = pytest.mark.slow

PUBLIC_URL = "https://agents.example.com/neuro"
CARD_PATHS = ("/.well-known/agent-card.json", "/a2a/math_guy/.well-known/agent-card.json",
              "/a2a/math_guy/.well-known/agent.json")
HOSTILE_HOSTS = ("user@evil.example/x?", "evil.example/x", "evil.example?x=1", "evil.example#x",
                 "evil.example:80@x", "evil example", "evil.example:0", "evil.example:99999", "evil.example:",
                 "[::1]evil.example", "[fe80::1%25eth0]", "evil.example:80:80", "%65vil.example", "")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """One server naming itself by the request's Host, one by its configured public URL
    (started side by side: each takes seconds)."""
    # Every name allowed by the host's allowlist, so that the cards' own guard is what is tested.
    anywhere = {"AGENT_HTTP_ALLOWED_HOSTS": "*"}
    with ThreadPoolExecutor(2) as pool:
        by_host = pool.submit(launch, env=anywhere, http=True)
        public = pool.submit(launch, env={**anywhere, "AGENT_HTTP_PUBLIC_URL": PUBLIC_URL,
                                          "AGENT_A2A_CARD_MAX_AGE": "60"}, http=True)
        running = (by_host.result(), public.result())
    try:
        yield running
    finally:
        for server in running:
            server.terminate()


def _raw_get(server: ServerProcess, path: str, host: str, extra: str = "") -> tuple[int, str, bytes]:
    """GET ``path`` with ``Host: host`` written as is: (status, head, body)."""
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.decode("latin-1"), body


def _urls(card: dict[str, object]) -> list[str]:
    """Every URL a card names (interfaces, the 0.3 ``url``, the provider's)."""
    interfaces = card.get("supportedInterfaces", []) + card.get("additionalInterfaces", [])  # type: ignore[operator]
    provider = card.get("provider") or {}
    urls = [i["url"] for i in interfaces] + [provider["url"]]  # type: ignore[index]
    return [*urls, card["url"]] if "url" in card else urls  # type: ignore[list-item]


def test_host_parsing_is_strict() -> None:
    assert parse_host("Agents.Example.com:8443") == ("agents.example.com", 8443)
    assert parse_host("127.0.0.1") == ("127.0.0.1", None)
    assert parse_host("[::1]:80") == ("[::1]", 80)
    assert parse_host("localhost.") == ("localhost.", None)
    for hostile in HOSTILE_HOSTS:
        assert parse_host(hostile) is None, hostile


def test_if_none_match_reads_star_lists_and_weak_tags() -> None:
    tag = '"abc"'
    assert none_match("*", tag) and none_match('"abc"', tag) and none_match('W/"abc"', tag)
    assert none_match('"x", W/"abc" , "y"', tag)
    assert not none_match('"abcd"', tag) and not none_match(None, tag) and not none_match("abc", tag)
    assert not none_match('"x" junk, "abc"', tag)  # malformed: matches nothing


def test_bad_card_settings_are_refused_at_start() -> None:
    for bad in ("ftp://x.example", "https://user@x.example", "https://x.example/?q", "https://x.example/#f",
                "https://x.example:99999", "x.example", "https://x.example/a b"):
        with pytest.raises(ValueError, match="AGENT_HTTP_PUBLIC_URL"):
            protocol_frontends(playground=False, env={"AGENT_HTTP_PUBLIC_URL": bad})
    with pytest.raises(ValueError, match="AGENT_GRPC_PUBLIC_TARGET"):
        protocol_frontends(playground=False, env={"AGENT_GRPC_PUBLIC_TARGET": "x.example"})
    with pytest.raises(ValueError, match="AGENT_A2A_CARD_MAX_AGE"):
        protocol_frontends(playground=False, env={"AGENT_A2A_CARD_MAX_AGE": "soon"})
    settings = CardSettings.from_env({"AGENT_HTTP_PUBLIC_URL": "HTTPS://Agents.Example.com:8443/neuro/"})
    assert settings.public_url == "https://agents.example.com:8443/neuro" and settings.max_age == 300


def test_a_hostile_host_is_refused_and_never_echoed(servers: tuple[ServerProcess, ServerProcess]) -> None:
    by_host, _ = servers
    for path in CARD_PATHS:
        for hostile in HOSTILE_HOSTS:
            status, head, body = _raw_get(by_host, path, hostile)
            # 421 when the host's allowlist already refuses the malformed name, else the card's 400.
            assert status in (400, 421), (path, hostile, status)
            assert b"evil" not in body and "evil" not in head, (path, hostile)
    assert "Traceback" not in by_host.log()


def test_a_plain_host_names_the_cards_urls_and_varies_them(servers: tuple[ServerProcess, ServerProcess]) -> None:
    by_host, _ = servers
    status, head, body = _raw_get(by_host, CARD_PATHS[1], "Agents.Example:8443")
    assert status == 200
    card = json.loads(body)
    grpc = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert grpc == [f"agents.example:{by_host.grpc_port}"]
    urls = [u for u in _urls(card) if u not in grpc]
    assert all(u.startswith("http://agents.example:8443/") or u == "http://agents.example:8443" for u in urls), urls
    assert "vary: host, authorization, x-api-key" in head.lower()


def test_a_configured_public_url_names_every_card_url(servers: tuple[ServerProcess, ServerProcess]) -> None:
    _, public = servers
    for path in CARD_PATHS:
        status, head, body = _raw_get(public, path, "evil.example:8080")
        assert status == 200, (path, status, body)
        assert b"evil" not in body
        card = json.loads(body)
        grpc = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        assert grpc == [f"agents.example.com:{public.grpc_port}"]
        assert all(u.startswith(PUBLIC_URL) for u in _urls(card) if u not in grpc)
        lowered = head.lower()
        assert "cache-control: public, max-age=60" in lowered
        assert "vary: authorization, x-api-key" in lowered and "vary: host" not in lowered


def test_cards_carry_an_etag_and_answer_if_none_match(servers: tuple[ServerProcess, ServerProcess]) -> None:
    by_host, _ = servers
    with httpx.Client(base_url=by_host.http_base, timeout=10) as http:
        for path in CARD_PATHS:
            first = http.get(path)
            assert first.status_code == 200
            etag = first.headers["ETag"]
            assert etag.startswith('"') and first.headers["Cache-Control"] == "public, max-age=300"
            assert http.get(path).headers["ETag"] == etag  # the same card, the same tag
            for matching in (etag, f"W/{etag}", f'"stale", {etag}', "*"):
                again = http.get(path, headers={"If-None-Match": matching})
                assert again.status_code == 304, (path, matching)
                assert again.content == b"" and again.headers["ETag"] == etag
                assert again.headers["Cache-Control"] == "public, max-age=300"
            stale = http.get(path, headers={"If-None-Match": '"stale"'})
            assert stale.status_code == 200 and stale.json() == first.json()
        keyed = http.get(CARD_PATHS[1], headers={"Authorization": "Bearer any"})
        assert keyed.headers["Cache-Control"] == "private, max-age=300"  # a key may show private networks


def test_the_sdks_card_resolver_reads_the_card(servers: tuple[ServerProcess, ServerProcess]) -> None:
    by_host, _ = servers

    async def resolve() -> str:
        async with httpx.AsyncClient(timeout=10) as http:
            card = await A2ACardResolver(http, f"{by_host.http_base}/a2a/math_guy").get_agent_card()
            return card.supported_interfaces[0].url

    assert asyncio.run(resolve()) == f"{by_host.http_base}/a2a/math_guy"


def test_cors_keeps_the_cards_vary(servers: tuple[ServerProcess, ServerProcess]) -> None:
    """CORS adds ``Vary: Origin`` to the card's own ``Vary``, never in its place (a cache
    would otherwise serve one Host's card for another)."""
    by_host, _ = servers

    async def scenario() -> set[str]:
        config = GatewayConfig(cors_origins=("http://ui.example",))
        handle = await start_gateway(by_host.grpc_target, "127.0.0.1", 0, config,
                                     frontends=protocol_frontends(playground=False))
        try:
            async with httpx.AsyncClient(timeout=10) as http:
                reply = await http.get(f"http://127.0.0.1:{handle.port}{CARD_PATHS[1]}",
                                       headers={"Origin": "http://ui.example"})
            assert reply.status_code == 200 and reply.headers["Access-Control-Allow-Origin"] == "http://ui.example"
            return {v.strip().lower() for value in reply.headers.get_list("Vary") for v in value.split(",")}
        finally:
            await handle.stop()

    assert asyncio.run(scenario()) == {"host", "origin", "authorization", "x-api-key"}
