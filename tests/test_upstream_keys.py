"""neuro-san 0.7.15 keys that change behaviour and are not implemented are refused at
load with the key path and a reason (never accepted and ignored)."""

from __future__ import annotations

from typing import Any

import pytest

from neuro_san.network.builder import build_network
from neuro_san.network.errors import NetworkLoadError


def _document(front: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {**top, "tools": [{"name": "front", "instructions": "x", **(front or {})}]}


@pytest.mark.parametrize(
    ("document", "key_path", "reason"),
    [
        (_document(error_formatter="json"), "error_formatter", "is not supported"),
        (_document(error_fragments=["oops"]), "error_fragments", "not supported"),
        (_document({"error_formatter": "json"}), "tools[0].error_formatter", "is not supported"),
        (_document(llm_info_file="llm_info.hocon"), "llm_info_file", "not supported"),
        (_document({"max_execution_seconds": 5}), "tools[0].max_execution_seconds", "set it at the top level"),
        (_document({"max_attempts": 2}), "tools[0].max_attempts", "set it at the top level"),
        (
            _document({"function": {"description": "d", "invocation": "event"}}),
            "tools[0].function.invocation",
            "invocation 'event' is not supported",
        ),
        (
            _document({"function": {"description": "d", "invocation": {"invocation_type": "event"}}}),
            "tools[0].function.invocation",
            "invocation 'event'",
        ),
        (_document({"allow": {"reservations": True}}), "tools[0].allow.reservations", "reservations"),
    ],
)
def test_behaviour_changing_keys_are_refused(document: dict[str, Any], key_path: str, reason: str) -> None:
    with pytest.raises(NetworkLoadError) as caught:
        build_network(document, "net.hocon", "net")
    assert caught.value.file == "net.hocon"
    assert caught.value.key_path == key_path and reason in caught.value.reason


def test_keys_that_change_nothing_observable_are_accepted() -> None:
    document = _document(
        {"verbose": True, "function": {"description": "d", "invocation": "chatbot"},
         "allow": {"to_tracing": {"sly_data": ["x"]}, "reservations": False}, "structure_formats": "json"},
        verbose="extra", error_formatter="string", error_fragments=[],
    )  # fmt: skip
    spec = build_network(document, "net.hocon", "net")
    assert spec.front.structure_formats == ("json",)


def test_llm_info_file_from_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_LLM_INFO_FILE", "/etc/llm_info.hocon")
    with pytest.raises(NetworkLoadError) as caught:
        build_network(_document(), "net.hocon", "net")
    assert "AGENT_LLM_INFO_FILE is set" in caught.value.reason

