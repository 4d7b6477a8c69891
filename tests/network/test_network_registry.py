"""Manifests, the registry (broken files, several manifests, hot reload) and validate."""

from __future__ import annotations

import asyncio
import io
import os
import textwrap
from pathlib import Path

import neuro_san
from neuro_san.network.manifest import looks_like_manifest, read_manifest
from neuro_san.network.registry import (
    NetworkRegistry,
    default_manifest_path,
    manifest_paths_from_env,
)
from neuro_san.network.validate import main_validate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "networks"


def _network_text(front: str = "front", instructions: str = "Hi.", tools: str = "") -> str:
    return textwrap.dedent(
        f"""\
        llm_config {{ class = scripted }}
        tools = [
            {{ name = {front}, instructions = "{instructions}", tools = [{tools}] }}
            {{ name = helper, function {{ description = "Helps." }}, instructions = "Help." }}
        ]
        """
    )


def _write(path: Path, text: str) -> Path:
    """Write and make sure the change is visible to an mtime/size/inode scan."""
    existed = path.exists()
    before = path.stat().st_mtime_ns if existed else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    # Coarse file-system clocks can give an edit the same mtime: move it forward.
    after = path.stat().st_mtime_ns
    if existed and after <= before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))
    return path


# Manifests -----------------------------------------------------------------------------


def test_fixture_manifest_entries() -> None:
    manifest = read_manifest(FIXTURES / "manifest.hocon")
    assert manifest.errors == []
    entries = manifest.entries
    assert set(entries) == {"hello_world", "music_nerd", "calculator", "deep/math_guy", "not_there"}
    assert entries["deep/math_guy"].path == FIXTURES / "deep" / "math_guy.hocon"
    assert (entries["calculator"].serve, entries["calculator"].public) == (True, False)
    assert (entries["deep/math_guy"].serve, entries["deep/math_guy"].public) == (True, True)
    assert entries["not_there"].serve is False


def test_manifest_unquoted_dotted_keys_and_yaml(tmp_path: Path) -> None:
    hocon = _write(tmp_path / "m.hocon", "hello.hocon = true\nsub/x.yaml = {public = false}\n")
    assert {e.name: e.public for e in read_manifest(hocon).entries.values()} == {
        "hello": True,
        "sub/x": False,
    }
    yaml_manifest = _write(tmp_path / "m.yaml", "a.json: true\nb.yml: {serve: false}\n")
    entries = read_manifest(yaml_manifest).entries
    assert entries["a"].serve and not entries["b"].serve


def test_manifest_bad_entries_are_errors_of_their_own(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "manifest.json",
        '{"good.hocon": true, "yes.hocon": "yes", "flag.hocon": {"serve": "no"},'
        ' "x.txt": true, "../out.hocon": true, "good.yaml": true}',
    )
    manifest = read_manifest(path)
    assert list(manifest.entries) == ["good"]
    assert [str(error) for error in manifest.errors] == [
        f"{path}: yes.hocon: must be true, false or a dict with serve/public, not 'yes'",
        f"{path}: flag.hocon.serve: must be true or false, not 'no'",
        f"{path}: x.txt: unsupported network file type: use .hocon, .yaml, .yml or .json",
        f"{path}: ../out.hocon: a network path must be relative to the manifest's folder, "
        "inside it",
        f"{path}: good.yaml: agent name 'good' is already given by good.hocon",
    ]


def test_looks_like_manifest() -> None:
    assert looks_like_manifest({"a.hocon": True, "b.hocon": {"serve": False, "mcp": True}})
    assert not looks_like_manifest({"tools": [], "llm_config": {}})
    assert not looks_like_manifest({"llm_config": {"model_name": "x"}})
    assert not looks_like_manifest({})


def test_manifest_paths_from_env() -> None:
    packaged = Path(neuro_san.__file__).parent / "registries" / "manifest.hocon"
    assert default_manifest_path() == packaged
    assert manifest_paths_from_env(None) == [packaged]
    assert manifest_paths_from_env("  ") == [packaged]
    assert manifest_paths_from_env("/a/m.hocon:/b/m.yaml:") == [
        Path("/a/m.hocon"),
        Path("/b/m.yaml"),
    ]


# Registry ------------------------------------------------------------------------------


def test_registry_from_fixture_manifest() -> None:
    registry = NetworkRegistry.from_manifests([FIXTURES / "manifest.hocon"])
    assert registry.errors == []
    assert set(registry.networks()) == {"hello_world", "music_nerd", "calculator", "deep/math_guy"}
    calculator = registry.get("calculator")
    assert calculator is not None and calculator.public is False
    assert registry.get("not_there") is None


def test_broken_files_do_not_stop_the_others(tmp_path: Path) -> None:
    _write(tmp_path / "good.hocon", _network_text())
    bad = _write(tmp_path / "bad.hocon", _network_text(tools="ghost"))
    manifest = _write(
        tmp_path / "manifest.hocon",
        '"good.hocon" = true\n"bad.hocon" = true\n"gone.hocon" = true\n',
    )
    broken_manifest = _write(tmp_path / "other.hocon", '"x.hocon" = [\n')
    registry = NetworkRegistry.from_manifests([manifest, broken_manifest])
    assert set(registry.networks()) == {"good"}
    messages = [str(error) for error in registry.errors]
    assert messages[0].startswith(f"{broken_manifest}: line ")
    assert messages[1:] == [
        f"{bad}: tools[0].tools[0]: unknown agent 'ghost'",
        f"{tmp_path / 'gone.hocon'}: file not found",
    ]


def test_several_manifests_later_ones_override(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _write(tmp_path / f"{name}.hocon", _network_text())
    first = _write(tmp_path / "first.hocon", '"a.hocon" = true\n"b.hocon" = true\n')
    second_dir = tmp_path / "second"
    _write(second_dir / "c.hocon", _network_text(instructions="second"))
    second = _write(
        second_dir / "manifest.yaml",
        "c.hocon: true\n../a.hocon: true\n",  # refused: outside the manifest's folder
    )
    third = _write(tmp_path / "third.json", '{"b.hocon": false, "c.hocon": {"public": false}}')
    registry = NetworkRegistry.from_manifests([first, second, third])
    assert set(registry.networks()) == {"a", "c"}
    c_spec = registry.get("c")
    assert c_spec is not None
    # The third manifest's c.hocon (in tmp_path) replaced the second's, and is not public.
    assert c_spec.source == str(tmp_path / "c.hocon") and c_spec.public is False
    assert len(registry.errors) == 1 and "../a.hocon" in str(registry.errors[0])


# Hot reload ----------------------------------------------------------------------------


def test_reload_adds_changes_breaks_and_removes(tmp_path: Path) -> None:
    one = _write(tmp_path / "one.hocon", _network_text())
    manifest = _write(tmp_path / "manifest.hocon", '"one.hocon" = true\n')
    registry = NetworkRegistry.from_manifests([manifest])
    seen: list[set[str]] = []
    registry.on_change.append(seen.append)
    first = registry.get("one")
    assert first is not None

    # Nothing changed on disk: the same spec object, no notification.
    result = registry.reload()
    assert result.names == set() and registry.get("one") is first and seen == []

    # Added: a new file listed in the manifest, in a sub-folder.
    _write(tmp_path / "sub" / "two.yaml", "tools:\n  - name: solo\n    instructions: Hi.\n")
    _write(manifest, '"one.hocon" = true\n"sub/two.yaml" = true\n')
    result = registry.reload()
    assert result.added == {"sub/two"} and seen[-1] == {"sub/two"}

    # Changed.
    _write(one, _network_text(instructions="Changed."))
    result = registry.reload()
    assert result.changed == {"one"}
    second = registry.get("one")
    assert second is not None and second.front.instructions == "Changed."

    # Broken edit: the last good version keeps serving and the error is recorded.
    _write(one, _network_text(tools="nobody"))
    result = registry.reload()
    assert result.names == set()
    assert registry.get("one") is second
    assert [error.reason for error in registry.errors] == ["unknown agent 'nobody'"]

    # Fixed again.
    _write(one, _network_text(instructions="Fixed."))
    result = registry.reload()
    assert result.changed == {"one"} and registry.errors == []

    # Removed file: the network goes away (and the error says why).
    one.unlink()
    result = registry.reload()
    assert result.removed == {"one"} and registry.get("one") is None
    assert [error.reason for error in registry.errors] == ["file not found"]

    # Unlisted from the manifest: removed, no error.
    _write(manifest, '"sub/two.yaml" = {serve = false}\n')
    result = registry.reload()
    assert result.removed == {"sub/two"} and registry.networks() == {} and registry.errors == []


def test_public_flag_change_without_file_change(tmp_path: Path) -> None:
    _write(tmp_path / "one.hocon", _network_text())
    manifest = _write(tmp_path / "manifest.hocon", '"one.hocon" = true\n')
    registry = NetworkRegistry.from_manifests([manifest])
    _write(manifest, '"one.hocon" = {public = false}\n')
    assert registry.reload().changed == {"one"}
    spec = registry.get("one")
    assert spec is not None and spec.public is False


def test_broken_manifest_edit_keeps_last_good_entries(tmp_path: Path) -> None:
    _write(tmp_path / "one.hocon", _network_text())
    manifest = _write(tmp_path / "manifest.hocon", '"one.hocon" = true\n')
    registry = NetworkRegistry.from_manifests([manifest])
    _write(manifest, '"one.hocon" = tru e e [\n')
    result = registry.reload()
    assert result.names == set() and registry.get("one") is not None
    assert len(registry.errors) == 1 and registry.errors[0].file == str(manifest)


def test_failing_listener_does_not_break_reload(tmp_path: Path) -> None:
    one = _write(tmp_path / "one.hocon", _network_text())
    manifest = _write(tmp_path / "manifest.hocon", '"one.hocon" = true\n')
    registry = NetworkRegistry.from_manifests([manifest])
    calls: list[set[str]] = []

    def failing(names: set[str]) -> None:
        raise RuntimeError("listener bug")

    registry.on_change.extend([failing, calls.append])
    _write(one, _network_text(instructions="New."))
    assert registry.reload().changed == {"one"}
    assert calls == [{"one"}]


def test_watch_picks_up_changes_until_cancelled(tmp_path: Path) -> None:
    one = _write(tmp_path / "one.hocon", _network_text())
    manifest = _write(tmp_path / "manifest.hocon", '"one.hocon" = true\n')
    registry = NetworkRegistry.from_manifests([manifest])

    async def scenario() -> None:
        changed: asyncio.Queue[set[str]] = asyncio.Queue()
        registry.on_change.append(changed.put_nowait)
        task = asyncio.create_task(registry.watch(0.02))
        try:
            _write(one, _network_text(instructions="Watched."))
            assert await asyncio.wait_for(changed.get(), timeout=5) == {"one"}
            one.unlink()
            assert await asyncio.wait_for(changed.get(), timeout=5) == {"one"}
        finally:
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert task.cancelled()

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert registry.get("one") is None


# validate ------------------------------------------------------------------------------


def _validate(paths: list[str], tool_paths: list[str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main_validate(paths, out=out, err=err, tool_paths=tool_paths or [])
    return code, out.getvalue(), err.getvalue()


def test_validate_good_manifest_and_files(tmp_path: Path) -> None:
    # What the fixtures name but do not hold: their coded tools and /other_network.
    _write(tmp_path / "tools" / "accounting.py", "class Accountant:\n    pass\n")
    _write(tmp_path / "tools" / "math_tools" / "adder.py", "class Adder:\n    pass\n")
    _write(tmp_path / "other_network.hocon", _network_text())
    other = _write(tmp_path / "manifest.hocon", '{"other_network.hocon": true}')
    code, out, err = _validate(
        [str(FIXTURES / "manifest.hocon"), str(FIXTURES / "deep" / "math_guy.hocon"), str(other)],
        tool_paths=[str(tmp_path / "tools")],
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "OK hello_world",
        "OK music_nerd",
        "OK calculator",
        "OK deep/math_guy",
        "SKIP not_there (not served)",
        "OK math_guy",
        "OK other_network",
    ]


def test_validate_reports_each_error(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.hocon", _network_text())
    bad = _write(tmp_path / "bad.hocon", _network_text(tools="ghost"))
    listing = _write(tmp_path / "serving.yaml", "bad.hocon: true\nmissing.hocon: true\n")
    code, out, err = _validate([str(good), str(listing), str(tmp_path / "nope.json")])
    assert code == 1
    assert out.splitlines() == ["OK good"]
    assert err.splitlines() == [
        f"{bad}: tools[0].tools[0]: unknown agent 'ghost' (in agent 'front')",
        f"{tmp_path / 'missing.hocon'}: cannot read file: "
        f"[Errno 2] No such file or directory: '{tmp_path / 'missing.hocon'}'",
        f"{tmp_path / 'nope.json'}: cannot read file: "
        f"[Errno 2] No such file or directory: '{tmp_path / 'nope.json'}'",
    ]


def test_validate_needs_paths() -> None:
    code, _, err = _validate([])
    assert code == 1 and "nothing to validate" in err
