"""neuro-san-studio's own networks, served by neuro-san 0.7.12 and by this server from the
same project, answer ``list``, ``function`` and ``connectivity`` alike.

Opt-in: it needs a virtualenv with ``neuro-san-studio`` installed (0.4.3 brings
neuro-san 0.7.12), its python named by ``NEURO_SAN_STUDIO_PYTHON``::

    python3.12 -m venv /tmp/studio && /tmp/studio/bin/pip install neuro-san-studio==0.4.3
    NEURO_SAN_STUDIO_PYTHON=/tmp/studio/bin/python .venv/bin/python -m pytest tests/test_studio_upstream.py

The project is built in a temporary directory from that installation, as a studio user
gets one: ``ns init``, then the wheel's ``registries/``, ``coded_tools/``, ``middleware/``
and ``skills/`` laid over it (every network studio ships). Nothing of studio's is copied
into this repository. Both servers start in the project's root with ``ns run``'s
environment (tests/studio_support.py).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.studio_support import serve_project, studio_env
from tests.support.servers import free_port

STUDIO = os.environ.get("NEURO_SAN_STUDIO_PYTHON", "")
pytestmark = pytest.mark.skipif(not STUDIO, reason="set NEURO_SAN_STUDIO_PYTHON to compare with neuro-san 0.7.12")

#: Networks refused here that neuro-san serves, with the reason (docs/compatibility.md).
_MEM0 = "the mem0 memory backend is refused without the mem0ai package or MEM0_API_KEY (neuro-san fails at chat time)"
KNOWN: dict[str, str] = {
    "tools/persistent_memory_mem0": _MEM0,
    "industry/intranet_agents_with_memory_routing": _MEM0,
    "tools/gmail": "a LangChain toolkit (GmailToolkit) in the toolbox: this server runs no LangChain tools",
}


def _get(base: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(base + path, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None


def build_project(tmp_path: Path) -> Path:
    """``ns init`` in a fresh folder, then every network the wheel ships laid over it."""
    root = tmp_path / "project"
    root.mkdir()
    init = "import sys; from neuro_san_studio.commands.cli import main; sys.argv = ['ns', *sys.argv[1:]]; main()"
    subprocess.run(
        [STUDIO, "-c", init, "init", "--providers", "openai,anthropic"],
        cwd=root, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    where = "import os, neuro_san_studio; print(os.path.dirname(os.path.dirname(neuro_san_studio.__file__)))"
    out = subprocess.run([STUDIO, "-c", where], cwd=root, check=True, capture_output=True, text=True)
    site = Path(out.stdout.strip())
    skip = shutil.ignore_patterns("__pycache__")
    for folder in ("registries", "coded_tools", "middleware", "skills"):
        if (site / folder).is_dir():
            shutil.copytree(site / folder, root / folder, dirs_exist_ok=True, ignore=skip)
    return root


@contextlib.contextmanager
def upstream_server(root: Path, extra_env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    env.update(studio_env(root))
    env.update(
        {
            "AGENT_HEALTH_PROBE_PORT": "0",
            "AGENT_MCP_ENABLE": "false",
            "OPENAI_API_KEY": "sk-studio-test",
            "ANTHROPIC_API_KEY": "sk-ant-studio-test",
            **extra_env,
        }
    )
    log = (root.parent / "upstream.log").open("w")
    command = [STUDIO, "-m", "neuro_san.service.main_loop.server_main_loop", "--http_port", str(port)]
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            # Not up yet, or (on a busy machine) another service briefly on the port.
            with contextlib.suppress(OSError, http.client.HTTPException):
                if _get(base, "/api/v1/list")[0] == 200:
                    break
            alive = process.poll() is None and time.monotonic() < deadline
            assert alive, (root.parent / "upstream.log").read_text()[-3000:]
            time.sleep(1)
        yield base
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _candidates(root: Path) -> list[str]:
    registries = root / "registries"
    return sorted(
        str(path.relative_to(registries).with_suffix(""))
        for path in registries.rglob("*.hocon")
        if path.name != "manifest.hocon" and not path.name.startswith("manifest_")
    )


def _answers(base: str, names: list[str]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for name in names:
        for what in ("function", "connectivity"):
            answers[f"{name} {what}"] = _get(base, f"/api/v1/{name}/{what}")
    return answers


def _every_file_manifest(root: Path, names: list[str]) -> Path:
    """A manifest serving every network file studio ships (its own serves 61 of them)."""
    manifest = root / "registries" / "every_file_manifest.hocon"
    manifest.write_text(json.dumps({f"{name}.hocon": True for name in names}, indent=1))
    return manifest


@pytest.mark.parametrize("manifest", ["studio", "every_file"])
def test_studio_networks_answer_as_neuro_san_0_7_12(tmp_path: Path, manifest: str) -> None:
    root = build_project(tmp_path)
    names = _candidates(root)
    chosen: dict[str, str] = {}
    if manifest == "every_file":
        chosen["AGENT_MANIFEST_FILE"] = str(_every_file_manifest(root, names))
    # ns run's third tier: the toolbox shipped in the neuro_san_studio package.
    where = "import os, neuro_san_studio; print(os.path.dirname(neuro_san_studio.__file__))"
    package = subprocess.run([STUDIO, "-c", where], cwd=root, check=True, capture_output=True, text=True).stdout.strip()
    toolbox = {"AGENT_TOOLBOX_INFO_FILE": str(Path(package) / "toolbox" / "toolbox_info.hocon"), **chosen}
    with upstream_server(root, toolbox) as upstream:
        theirs_list = _get(upstream, "/api/v1/list")
        theirs = _answers(upstream, names)
    with serve_project(root, extra_env={"OPENAI_API_KEY": "sk-studio-test", **toolbox}, timeout=120) as server:
        ours_list = server.get("/api/v1/list")
        ours = _answers(server.http_base, names)
        log = server.log()
    served = [name for name in names if theirs[f"{name} function"][0] == 200]
    differences = []
    by_name = lambda listing: sorted(listing["agents"], key=lambda a: a["agent_name"])  # noqa: E731
    ours_names = {a["agent_name"] for a in ours_list[1]["agents"]}
    theirs_names = {a["agent_name"] for a in theirs_list[1]["agents"]} - set(KNOWN)
    expected = [a for a in by_name(theirs_list[1]) if a["agent_name"] in theirs_names]
    if ours_names != theirs_names or by_name(ours_list[1]) != expected:
        differences.append(
            f"list: only neuro-san {sorted(theirs_names - ours_names)}, only ours {sorted(ours_names - theirs_names)}"
        )
        for mine in ours_list[1]["agents"]:
            other = next((a for a in theirs_list[1]["agents"] if a["agent_name"] == mine["agent_name"]), None)
            if other is not None and other != mine:
                differences.append(f"list entry {mine['agent_name']}: neuro-san {other}, ours {mine}")
    for key, answer in theirs.items():
        name = key.split(" ")[0]
        if ours[key] != answer and name not in KNOWN:
            differences.append(f"{key}:\n  neuro-san {str(answer)[:600]}\n  ours      {str(ours[key])[:600]}")
    known = sorted(set(KNOWN) & set(served))
    report = f"{len(served)} networks served by neuro-san; known differences {known}\n" + "\n".join(differences)
    (tmp_path / "differences.txt").write_text(report + "\n\nour log:\n" + log)
    assert not differences, report + "\n\nour server's log (end):\n" + log[-6000:]
