"""Running the same MAXIMAL chats against neuro-san 0.7.15 and our server, and making
their streams comparable (the parity test, tests/system/test_stream_parity.py).

What is normalised, and why:

- ids, timings and token counts: ``time_taken_in_seconds``, ``total_tokens``,
  ``prompt_tokens``, ``completion_tokens`` and ``total_cost`` become ``"<n>"`` (upstream
  prices calls and counts with tiktoken; the prompts differ by a few words);
  ``successful_requests`` and ``empty_responses`` are compared as they are.
- ``caveats``: each side states what is true of its own accounting; only that the key
  is there is compared.
- model names under ``models``: upstream names the model by its dated release
  (``gpt-4o-2024-08-06``), we by the name the provider answered with.
- the deviations in docs/compatibility.md: ``__name`` → ``/name`` in the Invoking
  message of an external call; braces doubled in upstream's chat_context are undoubled;
  upstream's forwarded ``tool_result_origin`` is re-rooted as ours is; upstream's
  "declares no parameters" AGENT message is dropped (we log it).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.servers import ROOT, free_port

PARITY = ROOT / "tests" / "fixtures" / "parity"
_COUNTS = {"time_taken_in_seconds", "total_tokens", "prompt_tokens", "completion_tokens", "total_cost"}


@contextmanager
def upstream_server(python: str, llm_base: str, workdir: Path) -> Iterator[int]:
    """neuro-san 0.7.15's HTTP server on the parity networks; yields its port."""
    port = free_port()
    env = {
        **os.environ,
        "AGENT_MANIFEST_FILE": str(PARITY / "manifest.hocon"),
        "AGENT_TOOL_PATH": str(PARITY / "coded_tools"),
        "PYTHONPATH": str(PARITY),
        "AGENT_HTTP_PORT": str(port),
        "AGENT_HEALTH_PROBE_PORT": "0",
        "AGENT_MCP_ENABLE": "false",
        "OPENAI_API_BASE": llm_base,
        "OPENAI_API_KEY": "sk-parity",
    }
    log = (workdir / "upstream.log").open("w")
    # Run outside the repository, or `-m neuro_san…` would find our package, not theirs.
    command = [python, "-m", "neuro_san.service.main_loop.server_main_loop"]
    process = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while not _healthy(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"neuro-san did not start:\n{(workdir / 'upstream.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def maximal_chat(
    port: int,
    agent: str,
    text: str,
    sly_data: dict[str, Any] | None = None,
    chat_context: Any = None,
    chat_filter: str = "MAXIMAL",
) -> list[dict[str, Any]]:
    """The ``response`` of every line of one streaming chat over HTTP (MAXIMAL unless told)."""
    body: dict[str, Any] = {"user_message": {"text": text}, "chat_filter": {"chat_filter_type": chat_filter}}
    if sly_data is not None:
        body["sly_data"] = sly_data
    if chat_context is not None:
        body["chat_context"] = chat_context
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{agent}/streaming_chat",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        return [json.loads(line)["response"] for line in reply if line.strip()]


def normalise(message: dict[str, Any], upstream: bool) -> dict[str, Any]:
    """``message`` with what may differ between the servers made equal (module docstring)."""
    message = json.loads(json.dumps(message))
    structure = message.get("structure")
    if isinstance(structure, dict):
        _normalise_counts(structure)
        if "caveats" in structure:
            structure["caveats"] = "<caveats>"
        models = structure.get("models")
        if isinstance(models, dict):
            for provider, by_model in models.items():
                if isinstance(by_model, dict):
                    models[provider] = [_normalise_counts(v) for v in by_model.values()]
        name = structure.get("invoked_agent_name")
        if upstream and isinstance(name, str) and name.startswith("__"):
            structure["invoked_agent_name"] = "/" + name[2:].replace("__", "/")
            message["text"] = message["text"].replace(f"`{name}`", f"`{structure['invoked_agent_name']}`")
    if upstream:
        _reroot_tool_result_origin(message)
    context = message.get("chat_context")
    if upstream and isinstance(context, dict):
        for history in context.get("chat_histories", []):
            for item in history.get("messages", []):
                item["text"] = item.get("text", "").replace("{{", "{").replace("}}", "}")
    return message


def _reroot_tool_result_origin(message: dict[str, Any]) -> None:
    """Upstream re-roots a forwarded message's origin under the external node but not its
    tool_result_origin; we re-root both (docs/compatibility.md)."""
    origin, result_origin = message.get("origin") or [], message.get("tool_result_origin") or []
    if result_origin and origin and result_origin[0] != origin[0] and result_origin[0] in origin:
        message["tool_result_origin"] = origin[: origin.index(result_origin[0])] + result_origin


def is_upstream_only(message: dict[str, Any]) -> bool:
    """Upstream's once-per-process "declares no parameters" AGENT message, which we log
    instead (docs/compatibility.md)."""
    return message.get("type") == "AGENT" and str(message.get("text", "")).startswith("The front-man of external agent")


def _normalise_counts(structure: dict[str, Any]) -> dict[str, Any]:
    for key in _COUNTS & structure.keys():
        structure[key] = "<n>"
    return structure


def origin_of(message: dict[str, Any]) -> str:
    return ".".join(f"{o['tool']}#{o.get('instantiation_index', 0)}" for o in message.get("origin", []))


def by_origin(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Messages grouped by origin, each group in stream order (for parallel branches,
    whose interleaving is up to the scheduler on both servers)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        groups.setdefault(origin_of(message), []).append(message)
    return groups
