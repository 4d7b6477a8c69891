"""S10: the protocol front-ends against REST, the same echo chat on the same server in the
same run (16 clients, CPU per call from /proc). Each row says what the front-end costs
beyond REST's chat: its ratio to REST's CPU per call (issue 37's targets: MCP <= 1.2x,
the OpenAI API and AG-UI <= 1.3x; A2A is held to the SDK's own server, not to REST).

A2A's target (issue 37): our CPU per call <= the SDK's own server's (bench/a2a_floor.py,
built as its samples build one, an echo agent) + one REST chat, measured side by side in
this run, for each binding: JSON-RPC ``SendMessage`` and ``SendStreamingMessage``,
HTTP+JSON ``message:send`` and ``message:stream``, gRPC ``SendMessage`` and
``SendStreamingMessage``. A streaming call asks our network for token deltas, so it is held
to the SDK floor's streaming call (the same artifact chunks) + REST with ``stream_tokens``.
``a2a_sdk.<binding>.to_sdk_plus_rest`` is that ratio (<= 1.0 meets the target).
AG-UI always streams the answer's tokens, so it is held to REST with ``stream_tokens``
(``rest_tokens``); the fake LLM streams a short answer (``WORDS`` words, unpaced), so a
streamed call costs its tokens, not the pace's waiting. The OpenAI API and AG-UI chat
MAXIMAL (their usage and thinking are its steps), so REST is also run MAXIMAL
(``rest_maximal``, ``rest_tokens_maximal``) and their ``cpu_to_rest_maximal`` says how much
of their ratio that filter is. A front-end this server does not serve (404 on its path) is
reported as absent.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

from bench import procs
from bench.run import Settings, closed_spec, repeat

#: The front-ends S10 measures, and a path a GET of which tells whether the server serves it
#: (anything but 404: a POST-only route answers 405).
FRONTENDS = {"mcp": "/mcp", "a2a": "/a2a/echo/.well-known/agent-card.json", "openai": "/v1/models",
             "agui": "/ag-ui/echo"}
#: The front-ends that chat MAXIMAL, also compared with their REST row run MAXIMAL.
CHATS_MAXIMAL = frozenset({"openai", "agui"})
#: Which REST row each front-end is held to.
BASELINE = {"mcp": "rest", "a2a": "rest", "openai": "rest", "agui": "rest_tokens"}
#: The streamed answer's words (S9 measures pacing; here a token's cost is what matters).
WORDS = 5
#: A2A's bindings, each on our server and on the SDK's own: the load transport, whether it
#: goes to the gRPC port, and the REST row that, with the SDK floor, is its target.
A2A_BINDINGS = {
    "jsonrpc": ("a2a", False, "rest"),
    "jsonrpc_stream": ("a2a_stream", False, "rest_tokens"),
    "http_json": ("a2a_rest", False, "rest"),
    "http_json_stream": ("a2a_rest_stream", False, "rest_tokens"),
    "grpc": ("a2a_grpc", True, "rest"),
    "grpc_stream": ("a2a_grpc_stream", True, "rest_tokens"),
}


def _served(base: str, probe: str) -> bool:
    try:
        with urllib.request.urlopen(base + probe, timeout=10):  # noqa: S310 - loopback
            return True
    except urllib.error.HTTPError as error:
        return error.code != 404
    except (urllib.error.URLError, OSError):
        return False


def run_s10(s: Settings, fast: bool) -> dict[str, Any]:
    fake, fake_port = procs.start_fake(0.0, fast, "--stream-words", str(WORDS), "--stream-pace-ms", "0")
    result: dict[str, Any] = {"words": WORDS}
    try:
        server = procs.start_server(fake_port, fast)
        pid = server.proc.pid
        try:
            rest = closed_spec("http", server.http_base, "echo", s.clients, s.load_seconds, s, fast)
            result["rest"] = repeat(s.runs, lambda: procs.run_load(rest, pid, fake_pid=fake.pid))
            tokens = {**rest, "stream_tokens": True}
            result["rest_tokens"] = repeat(s.runs, lambda: procs.run_load(tokens, pid, fake_pid=fake.pid))
            # The OpenAI API and AG-UI chat MAXIMAL (their usage and thinking are its steps): the
            # same REST chats MAXIMAL say how much of their ratio that filter is.
            for name, base in (("rest_maximal", rest), ("rest_tokens_maximal", tokens)):
                maximal = {**base, "maximal": True}
                result[name] = repeat(s.runs, lambda: procs.run_load(maximal, pid, fake_pid=fake.pid))  # noqa: B023
            for name, probe in FRONTENDS.items():
                if not _served(server.http_base, probe):
                    result[name] = {"absent": True}
                    continue
                spec = closed_spec(name, server.http_base, "echo", s.clients, s.load_seconds, s, fast)
                measured = repeat(s.runs, lambda: procs.run_load(spec, pid, fake_pid=fake.pid))  # noqa: B023
                rest_cpu = result[BASELINE[name]]["cpu_ms_per_chat"]
                measured["cpu_to_rest"] = measured["cpu_ms_per_chat"] / rest_cpu if rest_cpu else 0.0
                if name in CHATS_MAXIMAL:
                    maximal_cpu = result[f"{BASELINE[name]}_maximal"]["cpu_ms_per_chat"]
                    measured["cpu_to_rest_maximal"] = measured["cpu_ms_per_chat"] / maximal_cpu if maximal_cpu else 0.0
                result[name] = measured
            if not result["a2a"].get("absent"):
                result["a2a_sdk"] = _a2a_against_sdk(s, fast, server, fake.pid, result)
        finally:
            server.proc.stop()
    finally:
        fake.stop()
    return result


def _a2a_against_sdk(
    s: Settings, fast: bool, server: procs.Server, fake_pid: int, result: dict[str, Any]
) -> dict[str, Any]:
    """Each A2A binding on our server, then on the SDK's own server, back to back (JSON-RPC
    ``SendMessage`` on ours is the ``a2a`` row already measured)."""
    floor, http_port, grpc_port, parser = procs.start_a2a_floor(fast, WORDS)
    rows: dict[str, Any] = {"parser": parser}
    try:
        for binding, (transport, on_grpc, baseline) in A2A_BINDINGS.items():
            ours_target = server.grpc_target if on_grpc else server.http_base
            sdk_target = f"127.0.0.1:{grpc_port}" if on_grpc else f"http://127.0.0.1:{http_port}"
            if transport == "a2a":
                ours = result["a2a"]
            else:
                spec = closed_spec(transport, ours_target, "echo", s.clients, s.load_seconds, s, fast)
                ours = repeat(s.runs, lambda: procs.run_load(spec, server.proc.pid, fake_pid=fake_pid))  # noqa: B023
            spec = closed_spec(transport, sdk_target, "echo", s.clients, s.load_seconds, s, fast)
            sdk = repeat(s.runs, lambda: procs.run_load(spec, floor.pid))  # noqa: B023
            rest_ms = result[baseline]["cpu_ms_per_chat"]
            target_ms = sdk["cpu_ms_per_chat"] + rest_ms
            rows[binding] = {
                "ours": ours, "sdk": sdk, "baseline": baseline, "rest_ms": rest_ms,
                "to_sdk_plus_rest": ours["cpu_ms_per_chat"] / target_ms if target_ms else 0.0,
            }  # fmt: skip
    finally:
        floor.stop()
    return rows
