
"""A project laid out as ``ns init`` lays one out (tests/fixtures/studio_project, written
for these tests), served by ``neuro-san serve`` started from its root with the
environment ``ns run`` sets: includes from the project root, group manifests, coded
tools found by walking up the network's path, a ``BranchActivation`` tool calling its
sibling agent, and a tool importing a neuro-san internal refused with the module named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.studio_support import copy_project, serve_project

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow


def test_studio_project_is_served_from_its_root(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    with serve_project(root) as server:
        status, listing = server.get("/api/v1/list")
        assert status == 200, server.log()
        names = sorted(agent["agent_name"] for agent in listing["agents"])
        # helper_only is served but private; the group manifest's network is there.
        assert names == ["basic/greeter", "experimental/solver_net"], server.log()
        assert server.get("/api/v1/basic/helper_only/function")[0] == 200

        status, function = server.get("/api/v1/basic/greeter/function")
        assert (status, function) == (200, {"function": {"description": "I greet."}})

        status, connectivity = server.get("/api/v1/experimental/solver_net/connectivity")
        assert status == 200
        nodes = {node["origin"]: node.get("tools", []) for node in connectivity["connectivity_info"]}
        assert nodes["solver"] == ["worker"]  # args.tools, as neuro-san reports it
        assert list(nodes) == ["front", "solver", "worker", "counter", "uses_internals"]

        answer = server.chat("experimental/solver_net", "two plus two")["text"]
        solver, counter, internals = answer.split("; ", 2)
        # The BranchActivation tool called the worker (an LLM agent) and got its answer.
        assert solver.startswith("SOLVER GOT: WORKED ON <") and "TWO PLUS TWO" in solver, answer
        assert "(SPEC CLASS BRANCH_SOLVER.BRANCHSOLVER)" in solver
        # coded_tools/experimental/shared_counter.py, found one folder up from the network's.
        assert counter == "12 letters"
        assert internals.startswith("Error: coded tool module")
        assert "neuro_san.internals.graph.persistence" in internals
        assert "which this server does not provide" in internals

        greeting = server.chat("basic/greeter", "hello")
        assert greeting["text"] == "hello"
        log = server.log()
    assert "serving NO agent networks" not in log


def test_missing_include_in_a_studio_project_is_refused_with_its_path(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    (root / "registries" / "expertise_scoping_instructions.hocon").unlink()
    with serve_project(root) as server:
        status, listing = server.get("/api/v1/list")
        log = server.log()
    assert status == 200
    assert [agent["agent_name"] for agent in listing["agents"]] == ["experimental/solver_net"]
    assert "registries/basic/greeter.hocon: line 6: include 'registries/expertise_scoping_instructions.hocon'" in log
