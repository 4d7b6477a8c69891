"""The parsed-HOCON cache (neuro_san/network/parse_cache.py): a warm entry is used
instead of parsing, anything whose parse depends on more than the text is never cached,
and a broken or unwritable cache is never an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neuro_san.network import files
from neuro_san.network.parse_cache import cache_dir, cacheable, parse_cached
from tests.support.servers import ROOT

NETWORK = '{ "tools": [ { "name": "a", "instructions": "include every detail" } ] }  # a comment\n'


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> Any:
        self.calls += 1
        return {"parsed": text.strip()[:5], "n": 1.5}


def test_a_second_parse_of_the_same_text_comes_from_the_cache(tmp_path: Path) -> None:
    parse = Counting()
    first = parse_cached(NETWORK, parse, tmp_path)
    second = parse_cached(NETWORK, parse, tmp_path)
    assert first == second == {"parsed": '{ "to', "n": 1.5}
    assert parse.calls == 1
    assert parse_cached(NETWORK + " ", parse, tmp_path) == first and parse.calls == 2  # other text: a miss


@pytest.mark.parametrize("text", [
    'a = ${HOME}\n', 'a = ${?LLM_MODEL}\n', 'include "other.hocon"\n', '{ include file("x.conf") }',
    'a = 1\ninclude required(classpath("x"))\n',
])
def test_text_that_reads_the_environment_or_other_files_is_always_parsed(tmp_path: Path, text: str) -> None:
    assert not cacheable(text)
    parse = Counting()
    parse_cached(text, parse, tmp_path)
    parse_cached(text, parse, tmp_path)
    assert parse.calls == 2 and list(tmp_path.iterdir()) == []


def test_a_corrupt_entry_is_parsed_again_and_replaced(tmp_path: Path) -> None:
    parse = Counting()
    parse_cached(NETWORK, parse, tmp_path)
    (entry,) = tmp_path.iterdir()
    entry.write_text("{not json", encoding="utf-8")
    assert parse_cached(NETWORK, parse, tmp_path) == {"parsed": '{ "to', "n": 1.5} and parse.calls == 2
    assert json.loads(entry.read_text(encoding="utf-8")) == {"parsed": '{ "to', "n": 1.5}


def test_an_unwritable_cache_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("", encoding="utf-8")
    parse = Counting()
    assert parse_cached(NETWORK, parse, blocked / "hocon") == {"parsed": '{ "to', "n": 1.5}
    assert parse_cached(NETWORK, parse, blocked / "hocon") == {"parsed": '{ "to', "n": 1.5} and parse.calls == 2


def test_the_directory_setting(tmp_path: Path) -> None:
    assert cache_dir({"AGENT_HOCON_CACHE_DIR": "off"}) is None
    assert cache_dir({"AGENT_HOCON_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/neuro-san-grpc/hocon")


def test_every_shipped_network_reads_the_same_from_a_warm_cache(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("AGENT_HOCON_CACHE_DIR", str(tmp_path))
    paths = sorted((ROOT / "neuro_san" / "registries").rglob("*.hocon"))
    assert paths
    cold = [files.read_document(path) for path in paths]
    assert list(tmp_path.iterdir())  # entries were written
    monkeypatch.setattr("pyhocon.ConfigFactory.parse_string", _no_parsing)
    assert [files.read_document(path) for path in paths] == cold


def _no_parsing(*_: Any, **__: Any) -> Any:
    raise AssertionError("parsed although the cache was warm")
