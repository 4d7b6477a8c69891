"""neuro-san-studio's package plugs its classes into the middleware registry: registered,
every class path studio's files write loads and has an implementation; not registered,
the loader refuses them at load with the reason (never a class accepted and not run)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neuro_san.cli.main import main
from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.middleware import registry as runtime_registry
from neuro_san.network import middleware_registry
from neuro_san.network.builder import build_network
from neuro_san.studio import plugin
from neuro_san.studio.config import (
    CHECKLIST_CLASS,
    DEFINITION_CLASS,
    INSTRUCTIONS_CLASS,
    MEMORY_CLASS,
    PERSISTENCE_CLASS,
    SKILLS_CLASS,
    STRUCTURE_CLASS,
)

#: Each class path as studio's HOCON files write it, with args that load.
ENTRIES: dict[str, dict[str, Any]] = {
    MEMORY_CLASS: {"memory_config": {"storage": {"backend": "json_file"}}},
    CHECKLIST_CLASS: {"checklist_title": "Plan"},
    SKILLS_CLASS: {"skill_sources": ["skills"]},
    STRUCTURE_CLASS: {"sly_data": True},
    INSTRUCTIONS_CLASS: {"sly_data": True},
    DEFINITION_CLASS: {"sly_data": True},
    PERSISTENCE_CLASS: {"sly_data": True},
}


def _network(class_name: str) -> dict[str, Any]:
    entry = {"class": class_name, "args": ENTRIES[class_name]}
    return {"tools": [{"name": "designer", "instructions": "x", "middleware": [entry]}]}


@pytest.fixture
def without_studio() -> Iterator[None]:
    plugin.unregister()
    try:
        yield
    finally:
        plugin.register()


@pytest.mark.parametrize("class_name", sorted(ENTRIES))
def test_every_studio_class_loads_and_has_an_implementation(class_name: str) -> None:
    (config,) = build_network(_network(class_name), "net.hocon", "net").agents["designer"].middleware
    assert config.middleware_class.origin == "neuro-san-studio"
    assert config.name == class_name.rsplit(".", 1)[-1]
    assert runtime_registry.lookup(type(config.settings)) is not None


def test_registering_twice_changes_nothing() -> None:
    before = middleware_registry.classes()
    plugin.register()
    assert middleware_registry.classes() == before and plugin.registered()


def test_without_the_plugin_studio_classes_are_refused_at_load(without_studio: None) -> None:
    assert not plugin.registered()
    with pytest.raises(NetworkLoadError) as caught:
        build_network(_network(MEMORY_CLASS), "studio.hocon", "net")
    assert (caught.value.file, caught.value.key_path) == ("studio.hocon", "tools[0].middleware[0].class")
    assert "neuro-san-studio's middleware classes are not registered in this process" in caught.value.reason
    # neuro-san's own middleware does not depend on the plugin.
    pii = {"class": "langchain.agents.middleware.PIIMiddleware", "args": {"pii_type": "email"}}
    build_network({"tools": [{"name": "a", "instructions": "x", "middleware": [pii]}]}, "net.hocon", "net")


def test_neuro_san_validate_plugs_studio_in(
    without_studio: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "designer.json"
    path.write_text(json.dumps(_network(CHECKLIST_CLASS)))
    assert main(["validate", str(path)]) == 0, capsys.readouterr()
    assert plugin.registered() and "OK designer" in capsys.readouterr().out
