"""Soak: minutes of mixed load on a real server, with flat memory and no errors.

    python -m tests.soak                 # 10 minutes (``make soak``)
    python -m tests.soak --minutes 2     # a shorter check

One ``neuro-san serve`` process (gRPC and the in-process gateway) runs the bundled
networks on the fake LLM (20 ms per call). ``--clients`` clients loop over a mix:
one-shot chats over gRPC and HTTP, MAXIMAL streams, three-turn conversations carried by
chat_context, chats on the coded-tool network, and chats abandoned part-way (which
must cancel cleanly). Every ten seconds the server's RSS and open file descriptors are
sampled. It fails (exit 1) on any chat that did not end as expected, on a server exit,
or when RSS at the end is more than 10 % above RSS after the warm-up (the first fifth).
Not part of CI: it takes as long as it is told to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence

import aiohttp
import grpc

from tests.support import load
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import ServerProcess, start_server

SAMPLE_SECONDS = 10.0
RSS_GROWTH_ALLOWED = 0.10


class Soak:
    def __init__(self, server: ServerProcess, clients: int, seconds: float) -> None:
        self.server = server
        self.clients = clients
        self.stop_at = time.monotonic() + seconds
        self.counts: Counter[str] = Counter()
        self.failures: list[str] = []
        self.numbers = itertools.count()

    def _check(self, kind: str, outcome: load.ChatOutcome, expected: str | None = None) -> None:
        if outcome.ok and (expected is None or outcome.text == expected):
            self.counts[kind] += 1
        else:
            self.counts[kind + " FAILED"] += 1
            self.failures.append(f"{kind}: {outcome}")

    async def one_shot(self, channel: grpc.aio.Channel, session: aiohttp.ClientSession, rng: random.Random) -> None:
        text = f"soak-{next(self.numbers)}"
        if rng.random() < 0.5:
            self._check("grpc", await load.grpc_chat(channel, "echo", text, timeout=30), text)
        else:
            self._check("http", await load.http_chat(session, self.server.http_base, "echo", text, timeout=30), text)

    async def maximal(self, channel: grpc.aio.Channel) -> None:
        text = f"soak-max-{next(self.numbers)}"
        self._check("maximal", await load.grpc_chat(channel, "echo", text, maximal=True, timeout=30), text)

    async def conversation(self, session: aiohttp.ClientSession) -> None:
        context = None
        for turn in range(3):
            text = f"soak-conv-{next(self.numbers)}-{turn}"
            outcome = await load.http_chat(session, self.server.http_base, "echo", text, context, timeout=30)
            self._check("conversation turn", outcome, text)
            if not outcome.ok:
                return
            context = outcome.chat_context

    async def coded_tool(self, channel: grpc.aio.Channel) -> None:
        self._check("math_guy", await load.grpc_chat(channel, "math_guy", "2 * (3 + 4)", timeout=30))

    async def abandoned(self, channel: grpc.aio.Channel, rng: random.Random) -> None:
        call = load.grpc_stream(channel, "echo", load.chat_request(f"soak-gone-{next(self.numbers)}", maximal=True))

        async def read() -> None:
            async for _ in call:
                pass

        reader = asyncio.create_task(read())
        await asyncio.sleep(rng.uniform(0.0, 0.03))  # the behaviour: clients that pause at random
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await reader
        self.counts["abandoned"] += 1

    async def client(self, number: int, channel: grpc.aio.Channel, session: aiohttp.ClientSession) -> None:
        rng = random.Random(number)
        while time.monotonic() < self.stop_at:
            pick = rng.random()
            if pick < 0.55:
                await self.one_shot(channel, session, rng)
            elif pick < 0.70:
                await self.maximal(channel)
            elif pick < 0.80:
                await self.conversation(session)
            elif pick < 0.90:
                await self.coded_tool(channel)
            else:
                await self.abandoned(channel, rng)

    async def run(self) -> None:
        async with grpc.aio.insecure_channel(self.server.grpc_target) as channel, aiohttp.ClientSession() as session:
            await asyncio.gather(*(self.client(n, channel, session) for n in range(self.clients)))


async def sample(server: ServerProcess, soak: Soak, samples: list[tuple[float, int, int]]) -> None:
    started = time.monotonic()
    while time.monotonic() < soak.stop_at:
        await asyncio.sleep(SAMPLE_SECONDS)  # the behaviour: memory sampled at a pace
        if server.process.poll() is not None:
            return
        pid = server.process.pid
        samples.append((time.monotonic() - started, load.rss_kib(pid), load.open_fds(pid)))
        elapsed, rss, fds = samples[-1]
        print(f"{elapsed:6.0f} s  rss {rss / 1024:7.1f} MiB  fds {fds:4d}  chats {sum(soak.counts.values()):7d}  "
              f"failures {len(soak.failures)}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args(argv)
    seconds = args.minutes * 60
    samples: list[tuple[float, int, int]] = []
    with FakeInThread(latency_ms=20, record=False) as fake, start_server(env=override_env(fake), http=True) as server:
        soak = Soak(server, args.clients, seconds)

        async def both() -> None:
            await asyncio.gather(soak.run(), sample(server, soak, samples))

        print(f"soak: {args.clients} clients for {seconds:.0f} s against pid {server.process.pid}", flush=True)
        asyncio.run(both())
        alive = server.process.poll() is None
        log = server.log()

    print("chats:", dict(sorted(soak.counts.items())))
    problems = list(soak.failures[:10])
    if not alive:
        problems.append(f"the server exited:\n{log[-3000:]}")
    warm = [s for s in samples if s[0] >= seconds / 5]
    if len(warm) >= 2:
        baseline, final = warm[0][1], warm[-1][1]
        growth = (final - baseline) / baseline
        print(f"rss after warm-up {baseline / 1024:.1f} MiB, at the end {final / 1024:.1f} MiB ({growth:+.1%})")
        if growth > RSS_GROWTH_ALLOWED:
            problems.append(f"RSS grew {growth:.1%} after the warm-up (allowed {RSS_GROWTH_ALLOWED:.0%})")
    else:
        print("too short to judge memory: run at least a minute")
    if problems:
        print(f"SOAK FAILED: {len(soak.failures)} failed chats", *problems, sep="\n  ")
        return 1
    print("SOAK PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
