"""``neuro-san serve`` plugs studio's classes in: a studio project whose network names
studio's checklist middleware (by studio's class path) is served. What composes is the
command line, so this runs it, not the loader (``validate``: test_studio_plugin.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuro_san.studio.config import CHECKLIST_CLASS
from tests.studio_support import copy_project, serve_project

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

PLANNER = json.dumps(
    {
        "tools": [
            {
                "name": "Planner",
                "function": {"description": "I plan."},
                "instructions": "Plan the work.",
                "middleware": [{"class": CHECKLIST_CLASS, "args": {"checklist_title": "Plan"}}],
            }
        ],
    }
).replace("{", '{\n include "config/llm_config.hocon",', 1)  # studio's llm_config, as its files include it


def _planner_project(tmp_path: Path) -> Path:
    root = copy_project(tmp_path)
    (root / "registries" / "basic" / "planner.hocon").write_text(PLANNER)
    manifest = root / "registries" / "manifest.hocon"
    served = manifest.read_text().replace(
        '"basic/greeter.hocon": true,', '"basic/greeter.hocon": true,\n"basic/planner.hocon": true,'
    )
    assert served != manifest.read_text()
    manifest.write_text(served)
    return root


def test_serve_serves_a_network_naming_a_studio_class(tmp_path: Path) -> None:
    root = _planner_project(tmp_path)
    with serve_project(root) as server:
        status, function = server.get("/api/v1/basic/planner/function")
        log = server.log()
    assert (status, function) == (200, {"function": {"description": "I plan."}}), log
    assert "not registered" not in log
