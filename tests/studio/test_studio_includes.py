"""HOCON includes as neuro-san resolves them: the working directory first (studio writes
``include "registries/aaosa.hocon"`` relative to the project root), then the including
file's folder; an include found in neither refuses the file, or the manifest, with its
path; a server left with no network says so in an ERROR line."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.includes import resolve_includes
from neuro_san.network.loader import load_network
from neuro_san.network.registry import NetworkRegistry
from tests.support.servers import start_server

NETWORK = """{
  include "config/llm_config.hocon"
  include "registries/shared.hocon"
  "llm_config": ${llm_config},
  "tools": [
    {"name": "front", "function": {"description": ${front_description}}, "instructions": "Lead."}
  ]
}
"""


def _project(root: Path) -> None:
    (root / "config").mkdir()
    (root / "registries" / "basic").mkdir(parents=True)
    (root / "config" / "llm_config.hocon").write_text('llm_config { "class": "scripted", "model_name": "m1" }\n')
    (root / "registries" / "shared.hocon").write_text('front_description = "From the shared file."\n')
    (root / "registries" / "basic" / "net.hocon").write_text(NETWORK)


def test_include_relative_to_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = load_network(tmp_path / "registries" / "basic" / "net.hocon", "basic/net")
    assert spec.front.llm_config["model_name"] == "m1"
    assert spec.front.function["description"] == "From the shared file."


def test_include_beside_the_file_when_not_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "nets"
    folder.mkdir()
    (folder / "llm.hocon").write_text('llm_config { "class": "scripted", "model_name": "beside" }\n')
    (folder / "net.hocon").write_text(
        '{include "llm.hocon"\n"llm_config": ${llm_config}, "tools": [{"name": "a", "instructions": "x"}]}\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_network(folder / "net.hocon", "net").front.llm_config["model_name"] == "beside"
    # The working directory wins when both have the file, as in neuro-san.
    (elsewhere / "llm.hocon").write_text('llm_config { "class": "scripted", "model_name": "cwd" }\n')
    assert load_network(folder / "net.hocon", "net").front.llm_config["model_name"] == "cwd"


def test_missing_include_refuses_the_file_with_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    (tmp_path / "config" / "llm_config.hocon").unlink()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NetworkLoadError) as caught:
        load_network(tmp_path / "registries" / "basic" / "net.hocon", "basic/net")
    message = str(caught.value)
    assert "line 2" in message  # the include, not the file
    assert str(tmp_path / "config" / "llm_config.hocon") in message
    assert str(tmp_path / "registries" / "basic" / "config" / "llm_config.hocon") in message


def test_missing_nested_include_refuses_the_top_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    (tmp_path / "registries" / "shared.hocon").write_text('include "gone.hocon"\nfront_description = "x"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NetworkLoadError) as caught:
        load_network(tmp_path / "registries" / "basic" / "net.hocon", "basic/net")
    assert str(tmp_path / "registries" / "gone.hocon") in str(caught.value)


def test_include_words_inside_strings_and_comments_are_not_includes(tmp_path: Path) -> None:
    text = (
        '# include "nothing.hocon"\n'
        '// include "nothing.hocon"\n'
        'a = "include \\"nothing.hocon\\""\n'
        'b = """\ninclude "nothing.hocon"\n"""\n'
    )
    assert resolve_includes(text, tmp_path / "x.hocon") == text


def test_manifest_include_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    (tmp_path / "registries" / "top.hocon").write_text(NETWORK)
    (tmp_path / "registries" / "basic" / "manifest.hocon").write_text('{"basic/net.hocon": true}\n')
    (tmp_path / "registries" / "manifest.hocon").write_text(
        '{include "registries/basic/manifest.hocon"\n"top.hocon": true}\n'
    )
    monkeypatch.chdir(tmp_path)
    registry = NetworkRegistry.from_manifests([tmp_path / "registries" / "manifest.hocon"])
    assert registry.errors == []
    assert sorted(registry.networks()) == ["basic/net", "top"]


def test_manifest_include_missing_is_an_error_of_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    (tmp_path / "registries" / "manifest.hocon").write_text(
        '{include "registries/missing/manifest.hocon"\n"basic/net.hocon": true}\n'
    )
    monkeypatch.chdir(tmp_path)
    registry = NetworkRegistry.from_manifests([tmp_path / "registries" / "manifest.hocon"])
    assert [error.file for error in registry.errors] == [str(tmp_path / "registries" / "manifest.hocon")]
    assert "registries/missing/manifest.hocon" in str(registry.errors[0])
    assert registry.networks() == {}


@pytest.mark.slow  # starts neuro-san serve
def test_server_serving_no_network_says_so(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.hocon"
    manifest.write_text('{include "nowhere/manifest.hocon"}\n')
    with start_server(manifest=manifest) as server:
        log = server.log()
    assert "nowhere/manifest.hocon" in log
    assert "serving NO agent networks" in log
    line = next(line for line in log.splitlines() if "serving NO agent networks" in line)
    assert "ERROR" in line


def test_hot_reload_follows_included_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A designer writes registries/generated/ (a network and the manifest the main one
    includes); an edit of an included llm_config reloads the networks that include it."""
    _project(tmp_path)
    generated = tmp_path / "registries" / "generated"
    generated.mkdir()
    (generated / "manifest.hocon").write_text("{}\n")
    (tmp_path / "registries" / "manifest.hocon").write_text(
        '{include "registries/generated/manifest.hocon"\n"basic/net.hocon": true}\n'
    )
    monkeypatch.chdir(tmp_path)
    registry = NetworkRegistry.from_manifests([tmp_path / "registries" / "manifest.hocon"])
    assert sorted(registry.networks()) == ["basic/net"]

    (generated / "made.hocon").write_text(NETWORK)
    (generated / "manifest.hocon").write_text('{"generated/made.hocon": true}\n')
    result = registry.reload()
    assert result.added == {"generated/made"}

    (tmp_path / "config" / "llm_config.hocon").write_text('llm_config { "class": "scripted", "model_name": "m2" }\n')
    result = registry.reload()
    assert result.changed == {"basic/net", "generated/made"}
    assert registry.networks()["basic/net"].front.llm_config["model_name"] == "m2"


def test_a_missing_include_that_appears_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    shared = tmp_path / "registries" / "shared.hocon"
    text = shared.read_text()
    shared.unlink()
    (tmp_path / "registries" / "manifest.hocon").write_text('{"basic/net.hocon": true}\n')
    monkeypatch.chdir(tmp_path)
    registry = NetworkRegistry.from_manifests([tmp_path / "registries" / "manifest.hocon"])
    assert registry.networks() == {} and len(registry.errors) == 1
    shared.write_text(text)
    assert registry.reload().added == {"basic/net"}
