"""The deployment files, checked without Docker or a cluster.

Kubernetes manifests: every document against the Kubernetes JSON schemas bundled in
``kubernetes-validate`` (offline, strict: unknown fields fail), then what a schema cannot
see: selectors that select, ports that exist, probe paths our gateway serves, a grace
period longer than the server's drain, an HPA aimed at the Deployment. The Dockerfile:
non-root user, a HEALTHCHECK, the ports, ``neuro-san serve`` as the command, and every
file it copies present. The health-check script runs against a real server.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from tests.support.servers import ROOT, ServerProcess, free_port

DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
DOCKERFILE = DEPLOY / "Dockerfile"
HEALTHCHECK = DEPLOY / "healthcheck.py"
PROBE_PATHS = {"/readyz", "/livez", "/healthz"}
KUBERNETES_VERSION = "1.30.0"


def _documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                found.append((path.name, document))
    return found


DOCUMENTS = _documents()


def _of_kind(kind: str) -> list[dict[str, Any]]:
    return [document for _, document in DOCUMENTS if document["kind"] == kind]


def _the(kind: str) -> dict[str, Any]:
    (document,) = _of_kind(kind)
    return document


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def _container_port(container: dict[str, Any], port: int | str) -> int:
    """The container port a probe or Service names (by name or number); fails if none."""
    for declared in container["ports"]:
        if port in (declared.get("name"), declared["containerPort"]):
            return int(declared["containerPort"])
    raise AssertionError(f"no container port {port!r} in {container['ports']}")


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container.get("env", []) if "value" in item}


def test_the_expected_kinds_are_there() -> None:
    kinds = sorted(document["kind"] for _, document in DOCUMENTS)
    assert kinds == sorted([
        "Deployment", "Service", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
        "Secret", "Kustomization", "StatefulSet", "Service",
    ])


@pytest.mark.parametrize(("file", "document"), DOCUMENTS, ids=[f"{f}:{d['kind']}" for f, d in DOCUMENTS])
def test_every_document_is_valid_against_the_kubernetes_schema(file: str, document: dict[str, Any]) -> None:
    assert document.get("apiVersion") and document.get("kind"), file
    if document["kind"] == "Kustomization":  # kustomize's own file, not an API object
        for resource in document["resources"]:
            assert (K8S / resource).is_file(), resource
        assert "secret.example.yaml" not in document["resources"]  # placeholders are never applied
        return
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", document["metadata"]["name"]), file
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_deployment_selects_its_pods_and_runs_serve_as_non_root() -> None:
    deployment = _the("Deployment")
    spec = deployment["spec"]
    assert _selects(spec["selector"]["matchLabels"], spec["template"]["metadata"]["labels"])
    pod = spec["template"]["spec"]
    container = _container(deployment)
    assert container["image"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    command = [*container.get("command", []), *container.get("args", [])]
    assert command[:2] == ["neuro-san", "serve"], command
    assert command[command.index("--host") + 1] == "0.0.0.0"
    # The pod may take longer to stop than the preStop pause plus the server's drain.
    grace = float(command[command.index("--grace") + 1])
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    pause = float(pre_stop[1]) if pre_stop[0] == "sleep" else 0.0
    assert pod["terminationGracePeriodSeconds"] > grace + pause
    # Ports: what the server listens on is what the container declares.
    env = _env(container)
    assert _container_port(container, "grpc") == int(env["AGENT_PORT"]) == 30011
    assert _container_port(container, "http") == int(env["AGENT_HTTP_PORT"]) == 8080
    # The HPA scales on CPU utilization, which needs a CPU request.
    assert container["resources"]["requests"]["cpu"]
    assert container["resources"]["limits"]["memory"]
    # Secrets are optional references, never literal values.
    for item in container["env"]:
        if "valueFrom" in item:
            assert item["valueFrom"]["secretKeyRef"]["optional"] is True
        assert "KEY" not in item["name"] or "valueFrom" in item, item["name"]


def test_probes_hit_paths_and_ports_the_gateway_serves() -> None:
    container = _container(_the("Deployment"))
    probes = {name: container[name] for name in ("readinessProbe", "livenessProbe", "startupProbe")}
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert probes["livenessProbe"]["httpGet"]["path"] == "/livez"
    http_port = int(_env(container)["AGENT_HTTP_PORT"])
    for name, probe in probes.items():
        assert probe["httpGet"]["path"] in PROBE_PATHS, name
        assert _container_port(container, probe["httpGet"]["port"]) == http_port, name


@pytest.mark.slow
def test_the_probe_paths_answer_on_a_real_server(server: ServerProcess) -> None:
    import urllib.request

    for path in PROBE_PATHS | {"/metrics"}:
        with urllib.request.urlopen(f"{server.http_base}{path}", timeout=5) as response:
            assert response.status == 200, path


def test_services_select_the_pods_and_target_declared_ports() -> None:
    deployment = _the("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    container = _container(deployment)
    services = {service["metadata"]["name"]: service for service in _of_kind("Service")
                if service["metadata"]["name"] != "neuro-san-redis"}
    for service in services.values():
        assert _selects(service["spec"]["selector"], labels), service["metadata"]["name"]
        for port in service["spec"]["ports"]:
            _container_port(container, port["targetPort"])
    ports = {port["name"]: port["port"] for port in services["neuro-san"]["spec"]["ports"]}
    assert ports == {"http": 8080, "grpc": 30011}
    # One headless Service for gRPC client-side balancing (kube-proxy balances connections only).
    headless = [s for s in services.values() if s["spec"].get("clusterIP") == "None"]
    assert len(headless) == 1 and [p["name"] for p in headless[0]["spec"]["ports"]] == ["grpc"]


def test_the_replicas_share_state_through_the_redis_of_the_manifests() -> None:
    env = _env(_container(_the("Deployment")))
    url = urlsplit(env["AGENT_REDIS_URL"])
    (redis,) = _of_kind("StatefulSet")
    (service,) = [s for s in _of_kind("Service") if s["metadata"]["name"] == url.hostname]
    assert _selects(service["spec"]["selector"], redis["spec"]["template"]["metadata"]["labels"])
    (container,) = redis["spec"]["template"]["spec"]["containers"]
    (port,) = service["spec"]["ports"]
    assert port["port"] == url.port and _container_port(container, port["targetPort"]) == 6379
    assert redis["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    args = container["args"]
    # Every key the server writes expires: evicting among those never drops the running-task index.
    assert args[args.index("--maxmemory-policy") + 1].startswith("volatile-")
    assert float(env["AGENT_REPLICA_LEASE_SECONDS"]) >= 1
    from gateway.state import StateSettings

    StateSettings.from_env(env)  # the values the server will check at start


def test_the_http_port_answers_to_the_services_names() -> None:
    """The Host allowlist (DNS rebinding) lets in-cluster clients call by Service name."""
    from gateway.host.allowed_hosts import AllowedHosts

    deployment = _the("Deployment")
    hosts = AllowedHosts.from_env(_env(_container(deployment)))  # as the server checks it at start
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for service in _of_kind("Service"):
        if not _selects(service["spec"]["selector"], labels):
            continue  # Redis's
        name = service["metadata"]["name"]
        for form in (name, f"{name}.prod.svc", f"{name}.prod.svc.cluster.local"):
            assert hosts.allows(f"{form}:8080"), form
    assert not hosts.allows("evil.example.com:8080")


def test_disruption_budget_and_autoscaler_fit_the_deployment() -> None:
    deployment = _the("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    pdb = _the("PodDisruptionBudget")
    assert _selects(pdb["spec"]["selector"]["matchLabels"], labels)
    hpa = _the("HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        deployment["apiVersion"], "Deployment", deployment["metadata"]["name"],
    )
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]
    # A drain must be possible: fewer pods required than the fewest that run.
    assert pdb["spec"]["minAvailable"] < min(hpa["spec"]["minReplicas"], deployment["spec"]["replicas"])


def test_secret_references_name_the_example_secret() -> None:
    secret = _the("Secret")
    container = _container(_the("Deployment"))
    for item in container["env"]:
        ref = item.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["name"] == secret["metadata"]["name"]
            assert ref["key"] in secret["stringData"], ref["key"]


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def test_dockerfile_runs_serve_as_non_root_with_a_healthcheck() -> None:
    stage = _final_stage()
    by_keyword: dict[str, list[str]] = {}
    for keyword, rest in stage:
        by_keyword.setdefault(keyword, []).append(rest)
    assert all(base.startswith("python:3.11-slim") for _, base in
               [(k, r) for k, r in _instructions() if k == "FROM"])
    user = by_keyword["USER"][-1].split(":")[0]
    assert user not in ("root", "0") and user.isdigit()  # numeric: runAsNonRoot can check it
    assert int(user) == _the("Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    # USER comes after every RUN of the final stage, so nothing runs as root afterwards.
    keywords = [keyword for keyword, _ in stage]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")
    assert sorted(by_keyword["EXPOSE"][0].split()) == ["30011", "8080"]
    (healthcheck,) = by_keyword["HEALTHCHECK"]
    assert "CMD" in healthcheck and "neuro-san-healthcheck" in healthcheck
    cmd = json.loads(by_keyword["CMD"][-1])
    assert cmd[:2] == ["neuro-san", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    deployment_command = _container(_the("Deployment"))["command"]
    assert deployment_command == cmd  # one command, whether Docker or Kubernetes starts it


def test_dockerfile_copies_only_files_that_exist_and_are_not_ignored() -> None:
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    assert {".git", ".venv"} <= set(ignored)
    for keyword, rest in _instructions():
        if keyword != "COPY" or rest.startswith("--from"):
            continue
        *sources, _destination = shlex.split(rest)
        for source in sources:
            assert (ROOT / source).exists(), source
            assert source.split("/")[0] not in ignored, source


@pytest.mark.slow
def test_healthcheck_script_is_ready_only_when_readyz_is(server: ServerProcess) -> None:
    def run(port: int) -> int:
        env = {**os.environ, "AGENT_HTTP_PORT": str(port)}
        env.pop("AGENT_TLS_CERT_FILE", None)
        env.pop("AGENT_HTTP_TLS_CERT_FILE", None)
        return subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, timeout=20,
                              capture_output=True).returncode

    assert run(server.http_port) == 0
    assert run(free_port()) == 1


def test_healthcheck_speaks_https_when_the_gateway_does() -> None:
    sys.path.insert(0, str(DEPLOY))
    try:
        import healthcheck
    finally:
        sys.path.remove(str(DEPLOY))
    assert healthcheck.probe_url({"AGENT_HTTP_PORT": "9"}) == "http://127.0.0.1:9/readyz"
    assert healthcheck.probe_url({"AGENT_TLS_CERT_FILE": "/c"}) == "https://127.0.0.1:8080/readyz"
    assert healthcheck.probe_url({"AGENT_HEALTHCHECK_URL": "https://x/readyz"}) == "https://x/readyz"
    assert Path(healthcheck.__file__).resolve() == HEALTHCHECK.resolve()
