"""``neuro-san serve`` started as ``ns run`` starts neuro-san: from a studio project's
root, with studio's environment (tests/studio/test_studio_*.py)."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.offline import MARK, ON, offline_pythonpath
from tests.support.servers import ROOT, free_port

STUDIO_FIXTURE = ROOT / "tests" / "fixtures" / "studio_project"


def copy_project(tmp_path: Path, source: Path = STUDIO_FIXTURE) -> Path:
    """A fresh copy of a project (the server writes caches into it)."""
    root = tmp_path / "project"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def studio_env(root: Path, package: Path | None = None) -> dict[str, str]:
    """What ``ns run`` sets to serve the project, none of it set beforehand
    (neuro_san_studio 0.4.3's ``ProjectEnvironment`` and run command).

    ``package``: the installed ``neuro_san_studio`` package. ``ns run`` falls back to the
    files it bundles for what the project does not have: ``mcp/mcp_info.hocon``, and the two
    toolbox files, looked for in the project under ``neuro_san_studio/toolbox/`` (a vendored
    copy), else the package's ``toolbox/`` (whose entries are ``neuro_san_studio.coded_tools.…``
    classes). Left out, as they do not change what is served: ``LOG_LEVEL``, the manifest's
    hot-reload period and process context, and nsflow's variables.
    """
    env = {
        "AGENT_MANIFEST_FILE": str(root / "registries" / "manifest.hocon"),
        "AGENT_TOOL_PATH": str(root / "coded_tools"),
        "PYTHONPATH": str(root),
    }
    mcp = root / "mcp" / "mcp_info.hocon"
    env["MCP_SERVERS_INFO_FILE"] = str(mcp if mcp.is_file() or package is None else package / "mcp" / "mcp_info.hocon")
    for name, file in (
        ("AGENT_TOOLBOX_INFO_FILE", "toolbox_info.hocon"),
        ("AGENT_NETWORK_DESIGNER_TOOLBOX_INFO_FILE", "agent_network_designer_toolbox_info.hocon"),
    ):
        vendored = root / "neuro_san_studio" / "toolbox" / file
        if vendored.is_file():
            env[name] = str(vendored)
        elif package is not None:
            env[name] = str(package / "toolbox" / file)
    return env


class StudioServer:
    def __init__(self, process: subprocess.Popen[str], http_port: int) -> None:
        self.process = process
        self.http_base = f"http://127.0.0.1:{http_port}"
        self.output: list[str] = []

    def log(self) -> str:
        return "".join(self.output)

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.http_base + path, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def chat(self, agent: str, text: str, sly_data: dict[str, Any] | None = None) -> dict[str, Any]:
        """The final AGENT_FRAMEWORK message of a MINIMAL chat."""
        body: dict[str, Any] = {"user_message": {"text": text}}
        if sly_data is not None:
            body["sly_data"] = sly_data
        request = urllib.request.Request(
            f"{self.http_base}/api/v1/{agent}/streaming_chat",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
        assert lines and "response" in lines[-1], lines
        return dict(lines[-1]["response"])


@contextlib.contextmanager
def serve_project(
    root: Path,
    extra_env: dict[str, str] | None = None,
    timeout: float = 30.0,
    package: Path | None = None,
    python_path: Sequence[Path] = (),
) -> Iterator[StudioServer]:
    """``neuro-san serve`` in ``root`` with studio's environment (no --manifest);
    ``package`` as for :func:`studio_env`, ``python_path`` added to ``PYTHONPATH``.

    Offline: the guard of tests/support/offline/ first on ``PYTHONPATH``, so a network's
    tool that would reach the internet (an MCP server, a skill on GitHub) is refused at once.
    """
    http_port = free_port()
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", "--port", str(free_port())]
    args += ["--http-port", str(http_port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    # Our package stays importable although the server runs in the project's root.
    env.update(studio_env(root, package))
    env["PYTHONPATH"] = offline_pythonpath(root, ROOT, *python_path)
    env.update({"PYTHONUNBUFFERED": "1", **(extra_env or {})})
    process = subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = StudioServer(process, http_port)
    ready = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            server.output.append(line)
            if line.startswith("READY "):
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not ready.wait(0.05):
        if time.monotonic() > deadline:
            process.kill()
            raise TimeoutError(server.log())
    try:
        assert process.poll() is None, server.log()
        assert ON in server.log(), "the server runs without the offline guard:\n" + server.log()
        yield server
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def refusals(log: str) -> dict[str, int]:
    """What the offline guard refused a server, from its log: each ``host:port`` and how
    often (the guard writes a line per refusal, whether or not the caller logs its error)."""
    # Searched, not matched per line: a thread's line may land inside another's output.
    found = re.findall(r"\[offline guard, pid \d+\] " + re.escape(MARK) + r": (\S+) refused", log)
    return dict(sorted(collections.Counter(found).items()))


@dataclass(frozen=True)
class ChatOutcome:
    """What a server did with one chat: ``answered`` is a final answer that is no error."""

    answered: bool
    what: str

    def __str__(self) -> str:
        return ("answered: " if self.answered else "") + self.what


#: How neuro-san's answers say an agent failed: its ``Agent stopped due to exception …``
#: (an LLM or middleware failure), the ``Error from <agent>: …`` its string error formatter
#: makes of it, the ``{"error": …}`` of the json one (in ``structure`` or a code block), and
#: the text it answers when no model of an llm_config can be made.
_ERROR_MARKS = ("Agent stopped due to exception", '"error":', "No fully-specified LLM found")


def _is_error(text: str, structure: Any) -> bool:
    if isinstance(structure, dict) and "error" in structure:
        return True
    return text.startswith(("Error from ", "Error: ")) or any(mark in text for mark in _ERROR_MARKS)


def chat_outcome(http_base: str, agent: str, text: str, timeout: float = 180.0) -> ChatOutcome:
    """One MINIMAL ``streaming_chat`` over HTTP, classified; never raises for a failed chat."""
    body = {"user_message": {"text": text}, "chat_filter": {"chat_filter_type": "MINIMAL"}}
    request = urllib.request.Request(
        f"{http_base}/api/v1/{agent}/streaming_chat",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return ChatOutcome(False, f"HTTP {error.code} {error.read().decode(errors='replace')[:300]}")
    except OSError as error:
        return ChatOutcome(False, f"no reply: {error!r}")
    try:
        lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    except ValueError:
        return ChatOutcome(False, f"not NDJSON: {raw[-300:]!r}")
    final = lines[-1].get("response") if lines and isinstance(lines[-1], dict) else None
    if not isinstance(final, dict):
        return ChatOutcome(False, f"no final message: {raw[-300:]!r}")
    said, structure = str(final.get("text") or ""), final.get("structure")
    if final.get("type") != "AGENT_FRAMEWORK":
        return ChatOutcome(False, f"last message is {final.get('type')}: {said[:300]!r}")
    if _is_error(said, structure):
        return ChatOutcome(False, f"error {said[:400]!r} {structure or ''}")
    if not said and not structure:
        return ChatOutcome(False, "an empty answer")
    return ChatOutcome(True, repr(said[:200]) if said else f"structure {str(structure)[:200]}")
