"""The container image's install path, run here without Docker (issue 34).

The build stage's ``pip wheel`` and the runtime stage's ``pip install`` are read from
``deploy/Dockerfile`` and run as written (``/wheels`` becomes a temporary folder) on the same
Python, in a fresh virtualenv, offline from the configured package index. Then the installed
``neuro-san serve`` (not this checkout: the server runs outside the repository) starts with
the Dockerfile's ``ENV``, the Deployment's command and every ``AGENT_*`` value it sets, its
Redis replaced by a real ``redis-server`` on loopback. Checked: the image's HEALTHCHECK
script, every probe and Service port, a chat, and an A2A task. What this does not cover (the
base image, ``docker build`` itself, the cluster) is in docs/deployment.md.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cluster import RedisProcess
from tests.support.servers import ROOT, free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]

DEPLOY = ROOT / "deploy"
WHEELS = "/wheels"


def _stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages, each a list of (INSTRUCTION, arguments), continuations joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "FROM":
            stages.append([])
        stages[-1].append((keyword.upper(), rest.strip()))
    return stages


def _pip_commands(stage: list[tuple[str, str]]) -> list[list[str]]:
    """The stage's ``pip`` commands; upgrading pip itself is skipped (it needs the internet)."""
    commands = []
    for keyword, rest in stage:
        if keyword != "RUN":
            continue
        for part in rest.split("&&"):
            words = shlex.split(part)
            if words[:1] == ["pip"] and "--upgrade" not in words:
                commands.append(words[1:])
    return commands


def _dockerfile_env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in stage:
        if keyword == "ENV":
            for item in shlex.split(rest):
                name, _, value = item.partition("=")
                env[name] = value
    return env


def _deployment_container() -> dict[str, Any]:
    (deployment,) = [d for d in yaml.safe_load_all((DEPLOY / "k8s" / "deployment.yaml").read_text())
                     if d and d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _services() -> list[dict[str, Any]]:
    found = yaml.safe_load_all((DEPLOY / "k8s" / "service.yaml").read_text())
    return [d for d in found if d and d["kind"] == "Service"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding what the runtime stage installs; returns its bin folder."""
    folder = tmp_path_factory.mktemp("image")
    build, *_, runtime = _stages()
    source = folder / "src"
    source.mkdir()
    for keyword, rest in build:
        if keyword == "COPY":
            *sources, destination = shlex.split(rest)
            for item in sources:
                target = source / (item if destination.endswith("/") or destination == "./" else destination)
                if (ROOT / item).is_dir():
                    shutil.copytree(ROOT / item, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(ROOT / item, target)
    wheels = folder / "wheels"
    venv = folder / "venv"
    # The same interpreter for both stages, as one base image serves both.
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True, timeout=60)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    for stage, cwd in ((build, source), (runtime, folder)):
        for command in _pip_commands(stage):
            command = [word.replace(WHEELS, str(wheels)) for word in command]
            if command[-1].endswith("*.whl"):  # a shell glob in the Dockerfile
                command[-1:] = [str(path) for path in wheels.glob("*.whl")]
            done = subprocess.run([*pip, *command], cwd=cwd, capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, f"pip {' '.join(command)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return venv / "bin"


@pytest.fixture(scope="module")
def pod(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The installed server with the Deployment's environment; yields that environment."""
    folder = tmp_path_factory.mktemp("pod")
    redis = RedisProcess(folder)
    redis.start()
    container = _deployment_container()
    env = {"PATH": f"{installed}:/usr/bin:/bin", "HOME": str(folder)}
    env.update(_dockerfile_env(_stages()[-1]))
    declared = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    assert {"AGENT_REDIS_URL", "AGENT_PORT", "AGENT_HTTP_PORT"} <= set(declared)
    env.update(declared)
    # Loopback stand-ins for what only a cluster has: the Redis Service, and free ports.
    env["AGENT_REDIS_URL"] = redis.url
    env["AGENT_PORT"], env["AGENT_HTTP_PORT"] = str(free_port()), str(free_port())
    command = list(container["command"])
    process = subprocess.Popen([str(installed / command[0]), *command[1:]], cwd=folder, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if line.startswith("READY "):
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert ready.wait(30) and process.poll() is None, "".join(output)
        yield env
    finally:
        process.terminate()
        process.wait(20)
        redis.stop()
    text = "".join(output)
    assert "Traceback" not in text, text


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=20) as response:
        assert response.status == 200
        return response.read().decode()


def test_the_image_installs_what_the_manifests_need(installed: Path) -> None:
    # AGENT_REDIS_URL needs redis; production runs on uvloop (the fast extra).
    probe = "import redis, uvloop, neuro_san; print(neuro_san.__file__)"
    done = subprocess.run([str(installed / "python"), "-c", probe],
                          capture_output=True, text=True, timeout=30, cwd="/")
    assert done.returncode == 0, done.stderr
    assert str(ROOT) not in done.stdout  # the installed package, not this checkout


def test_healthcheck_probes_and_service_ports_answer(installed: Path, pod: dict[str, str]) -> None:
    healthcheck = subprocess.run([str(installed / "python"), str(DEPLOY / "healthcheck.py")],
                                 env=pod, capture_output=True, text=True, timeout=20)
    assert healthcheck.returncode == 0, healthcheck.stderr
    container = _deployment_container()
    by_name = {port["name"]: port["containerPort"] for port in container["ports"]}
    # Here the server listens on free ports: map each declared container port to its setting.
    actual = {int(by_name["grpc"]): int(pod["AGENT_PORT"]), int(by_name["http"]): int(pod["AGENT_HTTP_PORT"])}
    for name in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container[name]["httpGet"]
        port = actual[int(by_name.get(probe["port"], probe["port"]))]
        assert _get(f"http://127.0.0.1:{port}{probe['path']}")[0] == 200, name
    for service in _services():
        for port in service["spec"]["ports"]:
            target = actual[int(by_name.get(port["targetPort"], port["targetPort"]))]
            with socket.create_connection(("127.0.0.1", target), timeout=5):
                pass


def test_a_chat_and_an_a2a_task_are_served(pod: dict[str, str]) -> None:
    base = f"http://127.0.0.1:{pod['AGENT_HTTP_PORT']}"
    answer = _post(f"{base}/api/v1/echo/streaming_chat", {"user_message": {"text": "from the image"}})
    assert "from the image" in answer
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "a task"}]}}}
    deadline = time.monotonic() + 10
    reply = json.loads(_post(f"{base}/a2a/echo", message, {"A2A-Version": "1.0"}))
    while "result" not in reply and time.monotonic() < deadline:
        time.sleep(0.2)
        reply = json.loads(_post(f"{base}/a2a/echo", message, {"A2A-Version": "1.0"}))
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply
    # The task went to the Redis the Deployment points at: it is read back from there.
    task_id = reply["result"]["task"]["id"]
    got = json.loads(_post(f"{base}/a2a/echo", {"jsonrpc": "2.0", "id": 2, "method": "GetTask",
                                                "params": {"id": task_id}}, {"A2A-Version": "1.0"}))
    assert got["result"]["id"] == task_id, got
