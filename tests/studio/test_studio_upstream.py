"""neuro-san-studio's own networks, served by neuro-san 0.7.12 and by this server from the
same project, answer ``list``, ``function`` and ``connectivity`` alike, and every network
neuro-san answers a chat on, we answer too.

Opt-in: it needs a virtualenv with ``neuro-san-studio`` installed (0.4.3 brings
neuro-san 0.7.12), its python named by ``NEURO_SAN_STUDIO_PYTHON``::

    python3.12 -m venv /tmp/studio && /tmp/studio/bin/pip install neuro-san-studio==0.4.3
    NEURO_SAN_STUDIO_PYTHON=/tmp/studio/bin/python .venv/bin/python -m pytest tests/studio/test_studio_upstream.py

The project is built in a temporary directory from that installation, as a studio user
gets one: ``ns init``, then the wheel's ``registries/``, ``coded_tools/``, ``middleware/``
and ``skills/`` laid over it (every network studio ships). Nothing of studio's is copied
into this repository. Both servers start in the project's root with ``ns run``'s
environment (tests/studio_support.py), the toolbox files bundled in the ``neuro_san_studio``
package included, whose entries are that package's own coded tools
(``neuro_san_studio.coded_tools.…``). Our server imports them as a user's does who installs
neuro-san-studio beside it without its dependencies (docs/studio.md): the package alone on
its ``PYTHONPATH`` (pip would refuse the wheel here, ``Requires-Python >=3.12``, where our
test environment may be 3.11; the package's code imports on 3.11). The third-party packages
those tools import (``ddgs``, ``bs4``, ``langchain_core``…) are not installed for our server,
so a call of such a tool answers an error naming the missing module; no chat here calls
one. For the chats, both talk to one fake LLM over real
HTTP (tests/fakes/fake_llm.py); each side's outcome per network is written to
``chats.txt`` in the test's temporary folder.

Offline: some networks name the internet (MCP servers, skills fetched from
raw.githubusercontent.com, web APIs), and tests never reach it. Every studio python this
test runs (``ns init``, both servers) and our server start with the guard of
tests/support/offline/ first on their ``PYTHONPATH``: its ``sitecustomize`` refuses at once
any connection or DNS lookup beyond loopback (plain sockets, asyncio's loop and uvloop),
with an error saying ``tests never reach the internet: <host>:<port> refused``, so those
tools fail immediately and alike on both sides. Each server must show the guard's start-up
line in its log; what the guard refused each is written at the top of ``differences.txt``
and ``chats.txt``. Not covered: native clients past Python's socket module (gRPC's C core,
``primp``), which no chat here uses (docstring of tests/support/offline/sitecustomize.py).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm import FakeLlmServer
from tests.studio_support import ChatOutcome, StudioServer, chat_outcome, refusals, serve_project, studio_env
from tests.support.fake_thread import FakeInThread
from tests.support.offline import ON, offline_env
from tests.support.servers import free_port

STUDIO = os.environ.get("NEURO_SAN_STUDIO_PYTHON", "")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not STUDIO, reason="set NEURO_SAN_STUDIO_PYTHON to compare with neuro-san 0.7.12")]

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


def _studio_env() -> dict[str, str]:
    """For studio's python run as a command: offline, and none of this run's ``PYTHONPATH``
    (``PYTHONPATH=.`` would put our ``neuro_san`` ahead of the venv's 0.7.12: ``ns init``
    fails importing ``neuro_san.internals…``)."""
    return offline_env({k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


def build_project(tmp_path: Path) -> Path:
    """``ns init`` in a fresh folder, then every network the wheel ships laid over it."""
    root = tmp_path / "project"
    root.mkdir()
    init = "import sys; from neuro_san_studio.commands.cli import main; sys.argv = ['ns', *sys.argv[1:]]; main()"
    subprocess.run(
        [STUDIO, "-c", init, "init", "--providers", "openai,anthropic"], env=_studio_env(),
        cwd=root, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    where = "import os, neuro_san_studio; print(os.path.dirname(os.path.dirname(neuro_san_studio.__file__)))"
    out = subprocess.run([STUDIO, "-c", where], cwd=root, env=_studio_env(), check=True, capture_output=True, text=True)
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
    env.update(studio_env(root, studio_package()))
    env.update(
        {
            "AGENT_HEALTH_PROBE_PORT": "0",
            "AGENT_MCP_ENABLE": "false",
            "OPENAI_API_KEY": "sk-studio-test",
            "ANTHROPIC_API_KEY": "sk-ant-studio-test",
            **extra_env,
        }
    )
    env = offline_env(env)  # the guard first on the PYTHONPATH ns run's environment sets
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
        assert ON in (root.parent / "upstream.log").read_text(), "neuro-san runs without the offline guard"
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


@functools.cache
def studio_package() -> Path:
    """The installed ``neuro_san_studio`` package (``ns run``'s bundled files are in it)."""
    where = "import os, neuro_san_studio; print(os.path.dirname(neuro_san_studio.__file__))"
    out = subprocess.run([STUDIO, "-c", where], env=_studio_env(), check=True, capture_output=True, text=True, cwd="/")
    return Path(out.stdout.strip())


@contextlib.contextmanager
def serve_ours(root: Path, extra_env: dict[str, str]) -> Iterator[StudioServer]:
    """Our server as ``ns run`` would start it, ``neuro_san_studio`` importable by it: a
    folder holding only that package (what ``pip install --no-deps`` adds) on its path."""
    site = root.parent / "our_site_packages"
    site.mkdir(exist_ok=True)
    link = site / "neuro_san_studio"
    if not link.exists():
        link.symlink_to(studio_package(), target_is_directory=True)
    with serve_project(root, extra_env, timeout=120, package=studio_package(), python_path=[site]) as server:
        yield server


def _differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """What our list / function / connectivity answers say that neuro-san's do not."""
    differences = []
    theirs_list, ours_list = theirs.pop("list"), ours.pop("list")
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
    return differences


def _refused(root: Path, ours_log: str) -> str:
    """What the offline guard refused each server: what would have gone to the internet."""
    theirs, ours = refusals((root.parent / "upstream.log").read_text()), refusals(ours_log)
    return f"refused by the offline guard: neuro-san {theirs or 'nothing'}; ours {ours or 'nothing'}"


def _assert_no_differences(
    root: Path, tmp_path: Path, names: list[str], theirs: dict[str, Any], ours: dict[str, Any], log: str
) -> None:
    served = [name for name in names if theirs[f"{name} function"][0] == 200]
    differences = _differences(theirs, ours)
    known = sorted(set(KNOWN) & set(served))
    report = f"{len(served)} networks served by neuro-san; known differences {known}\n{_refused(root, log)}\n"
    report += "\n".join(differences)
    (tmp_path / "differences.txt").write_text(report + "\n\nour log:\n" + log)
    assert not differences, report + "\n\nour server's log (end):\n" + log[-6000:]


def test_studio_manifest_networks_answer_as_neuro_san_0_7_12(tmp_path: Path) -> None:
    """The project as ``ns init`` makes it: studio's manifest (61 networks)."""
    root = build_project(tmp_path)
    names = _candidates(root)
    with upstream_server(root, {}) as upstream:
        theirs = {"list": _get(upstream, "/api/v1/list"), **_answers(upstream, names)}
    with serve_ours(root, {"OPENAI_API_KEY": "sk-studio-test"}) as server:
        ours = {"list": server.get("/api/v1/list"), **_answers(server.http_base, names)}
        log = server.log()
    _assert_no_differences(root, tmp_path, names, theirs, ours, log)


@dataclass
class Pair:
    """Both servers on the same project, every network file served, one fake LLM behind both."""

    root: Path
    names: list[str]
    upstream: str
    ours: StudioServer
    fake: FakeLlmServer


def _fake_llm_env(fake: FakeLlmServer, folder: Path) -> dict[str, str]:
    """Every network of either server on ``fake``, whatever model its llm_config names.

    OpenAI and Anthropic models (all studio's networks name but three local Ollama ones)
    reach the fake through an ``AGENT_LLM_INFO_FILE`` both servers read: neuro-san 0.7.12's
    class defaults send OpenAI models to the Responses API (the fake speaks Chat
    Completions; ``use_responses_api: false`` is neuro-san's documented switch back, which
    we accept and ignore) and name ``https://api.anthropic.com`` as ``anthropic_api_url``,
    ahead of any environment variable. We read the same class defaults.
    """
    info = folder / "fake_llm_info.hocon"
    classes = {
        "openai": {"args": {"use_responses_api": False, "openai_api_base": fake.openai_base}},
        "anthropic": {"args": {"anthropic_api_url": fake.url}},
    }
    info.write_text(json.dumps({"classes": classes}))
    return {
        "OPENAI_API_KEY": "sk-studio-test",
        "ANTHROPIC_API_KEY": "sk-ant-studio-test",
        "AGENT_LLM_INFO_FILE": str(info),
    }


@pytest.fixture(scope="module")
def every_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """Both servers started once for the module, side by side."""
    root = build_project(tmp_path_factory.mktemp("studio"))
    names = _candidates(root)
    with FakeInThread() as fake:
        env = {"AGENT_MANIFEST_FILE": str(_every_file_manifest(root, names))}
        env.update(_fake_llm_env(fake, root.parent))
        with upstream_server(root, env) as upstream, serve_ours(root, env) as ours:
            yield Pair(root, names, upstream, ours, fake)


def test_every_studio_network_file_answers_as_neuro_san_0_7_12(every_file: Pair, tmp_path: Path) -> None:
    """All 89 files served (studio's manifest leaves 28 out)."""
    names, upstream, ours = every_file.names, every_file.upstream, every_file.ours
    theirs = {"list": _get(upstream, "/api/v1/list"), **_answers(upstream, names)}
    mine = {"list": ours.get("/api/v1/list"), **_answers(ours.http_base, names)}
    _assert_no_differences(every_file.root, tmp_path, names, theirs, mine, ours.log())


CHAT_TEXT = "Hello! Please tell me briefly what you can do."

#: Networks no model that only echoes can finish, on either server: their validation
#: middleware sends the model back until it has built a network with its tools, so both
#: servers loop (send-back after send-back) until ``max_execution_seconds: 6000``.
_DESIGNER_LOOP = "its validation middleware sends an echoing model back until max_execution_seconds (6000 s)"
NOT_CHATTED: dict[str, str] = {
    "agent_network_editor": _DESIGNER_LOOP,
    "agent_network_instructions_editor": _DESIGNER_LOOP,
}


def test_every_studio_network_neuro_san_answers_we_answer(every_file: Pair, tmp_path: Path) -> None:
    """One chat per network file on each server, on the fake LLM (it answers every model
    call with the last user text or tool result, so the front man answers at once)."""
    skipped = {**KNOWN, **NOT_CHATTED}
    names = [name for name in every_file.names if name not in skipped]
    bases = {"neuro-san": every_file.upstream, "ours": every_file.ours.http_base}
    jobs = [(side, name) for name in names for side in bases]
    with ThreadPoolExecutor(max_workers=8) as pool:
        done = pool.map(lambda job: chat_outcome(bases[job[0]], job[1], CHAT_TEXT), jobs)
        outcomes: dict[tuple[str, str], ChatOutcome] = dict(zip(jobs, done, strict=True))
    lines, failures = [], []
    for name in names:
        theirs, ours = outcomes["neuro-san", name], outcomes["ours", name]
        line = f"{name}\n  neuro-san {theirs}\n  ours      {ours}"
        lines.append(line)
        if theirs.answered and not ours.answered:
            failures.append(line)
    count = {side: sum(outcomes[side, name].answered for name in names) for side in bases}
    not_chatted = "\n".join(f"{name}: not chatted, {reason}" for name, reason in sorted(skipped.items()))
    summary = f"{len(names)} networks chatted; answered: neuro-san {count['neuro-san']}, ours {count['ours']}"
    refused = _refused(every_file.root, every_file.ours.log())
    report = f"{summary}\n{refused}\n{not_chatted}\n\n" + "\n".join(lines)
    (tmp_path / "chats.txt").write_text(report + "\n\nour log:\n" + every_file.ours.log())
    assert count["neuro-san"], "neuro-san answered no chat: the fake LLM is not reached\n" + report
    assert not failures, (
        f"{summary}\nneuro-san answers, we do not:\n" + "\n".join(failures) + "\n\nour log (end):\n"
        + every_file.ours.log()[-6000:]
    )  # fmt: skip
