"""``neuro-san serve`` started as ``ns run`` starts neuro-san: from a studio project's
root, with studio's environment (tests/studio/test_studio_*.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.servers import ROOT, free_port

STUDIO_FIXTURE = ROOT / "tests" / "fixtures" / "studio_project"


def copy_project(tmp_path: Path, source: Path = STUDIO_FIXTURE) -> Path:
    """A fresh copy of a project (the server writes caches into it)."""
    root = tmp_path / "project"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def studio_env(root: Path) -> dict[str, str]:
    """What ``ns run`` sets (neuro_san_studio's ProjectEnvironment and run command)."""
    env = {
        "AGENT_MANIFEST_FILE": str(root / "registries" / "manifest.hocon"),
        "AGENT_TOOL_PATH": str(root / "coded_tools"),
        "MCP_SERVERS_INFO_FILE": str(root / "mcp" / "mcp_info.hocon"),
        "PYTHONPATH": str(root),
    }
    toolbox = root / "toolbox" / "toolbox_info.hocon"
    if toolbox.is_file():
        env["AGENT_TOOLBOX_INFO_FILE"] = str(toolbox)
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
def serve_project(root: Path, extra_env: dict[str, str] | None = None, timeout: float = 30.0) -> Iterator[StudioServer]:
    """``neuro-san serve`` in ``root`` with studio's environment (no --manifest)."""
    http_port = free_port()
    args = [sys.executable, "-m", "neuro_san.cli.main", "serve", "--host", "127.0.0.1", "--port", str(free_port())]
    args += ["--http-port", str(http_port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    # Our package stays importable although the server runs in the project's root.
    env.update(studio_env(root))
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT)])
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
        yield server
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
