"""The network file's top-level ``stream_tokens`` key: the network's default for requests
that do not say whether they want token deltas (docs/streaming.md)."""

from __future__ import annotations

from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.builder import build_network

FRONT = {"name": "front", "function": {"description": "Answers."}, "instructions": "Answer."}


def network(**top: Any) -> dict[str, Any]:
    return {"llm_config": {"class": "scripted"}, "tools": [dict(FRONT)], **top}


def test_absent_is_off_and_a_boolean_is_kept() -> None:
    assert build_network(network(), "n.json", "n").stream_tokens is False
    assert build_network(network(stream_tokens=True), "n.json", "n").stream_tokens is True


@pytest.mark.parametrize("value", ["true", 1, {"on": True}])
def test_anything_but_a_boolean_is_refused_at_load(value: Any) -> None:
    with pytest.raises(NetworkLoadError, match="stream_tokens.*must be true or false"):
        build_network(network(stream_tokens=value), "n.json", "n")
