"""The middleware registry: entries checked at load (refusals with file and key path), and
a class plugged in through both halves of the registry is accepted and runs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.middleware import registry as runtime_registry
from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.network import middleware_registry
from neuro_san.network.builder import build_network
from neuro_san.network.middleware_args import MiddlewareArgs
from neuro_san.network.middleware_registry import EntryContext, MiddlewareClass
from neuro_san.network.validate import main_validate
from tests.fakes.fake_llm import FakeLlmServer, Reply, run_with_fake_llm
from tests.support.runtime import make_host, run_chat

PII = "langchain.agents.middleware.PIIMiddleware"
SUMMARY = "neuro_san.middleware.neuro_san_summarization_middleware.NeuroSanSummarizationMiddleware"
MOTTO = "my.pkg.MottoMiddleware"
REPO = Path(__file__).resolve().parents[2]


def _agent_with(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"tools": [{"name": "a", "instructions": "x", "middleware": list(entries)}]}


REFUSALS = [
    ({"class": "my.pkg.TracingMiddleware"}, "tools[0].middleware[0].class", "is not supported"),
    (
        {"class": "neuro_san.middleware.network_copy_middleware.NetworkCopyMiddleware",
         "args": {"sly_data": True}},
        "tools[0].middleware[0].allow.reservations",
        "needs",
    ),
    (
        {"class": PII, "args": {"pii_type": "email"}, "allow": {"reservations": True}},
        "middleware[0].allow.reservations",
        "only NetworkCopyMiddleware",
    ),
    ({"class": PII, "args": {"pii_type": "email", "strategy": "shred"}}, "middleware[0].args.strategy", "one of"),
    ({"class": PII, "args": {"pii_type": "phone"}}, "middleware[0].args.detector", "not a built-in"),
    ({"class": PII, "args": {"pii_type": "x", "detector": "(["}}, "middleware[0].args.detector", "regular expression"),
    ({"class": PII, "args": {"pii_type": "email", "colour": 1}}, "middleware[0].args.colour", "unknown argument"),
    ({"class": SUMMARY, "args": {"trigger": ["minutes", 3]}}, "middleware[0].args.trigger", "must be"),
    ({"class": PII, "args": {"pii_type": "email"}, "checkpointer": {}}, "middleware[0].checkpointer", "not supported"),
    ({"args": {}}, "middleware[0].class", "missing"),
    (
        {"class": "neuro_san.middleware.llm_config_tool_selector_middleware.LlmConfigToolSelectorMiddleware",
         "args": {"max_tools": 2}},
        "middleware[0].args.llm_config",
        "missing",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "key_path", "reason"), REFUSALS)
def test_unsupported_middleware_is_refused_at_load(entry: dict[str, Any], key_path: str, reason: str) -> None:
    with pytest.raises(NetworkLoadError) as caught:
        build_network(_agent_with(entry), "net.hocon", "net")
    assert caught.value.file == "net.hocon"
    assert caught.value.key_path.endswith(key_path) and reason in caught.value.reason


def test_an_unregistered_class_is_refused_naming_the_file_the_key_and_what_is_served() -> None:
    with pytest.raises(NetworkLoadError) as caught:
        build_network(_agent_with({"class": MOTTO}), "net.hocon", "net")
    assert (caught.value.file, caught.value.key_path) == ("net.hocon", "tools[0].middleware[0].class")
    assert caught.value.reason.startswith(f"middleware {MOTTO!r} is not supported: this server implements only")
    assert PII in caught.value.reason and SUMMARY in caught.value.reason


def test_the_same_middleware_twice_is_refused_not_hung() -> None:
    twice = [{"class": PII, "args": {"pii_type": "email"}}, {"class": PII, "args": {"pii_type": "email"}}]
    with pytest.raises(NetworkLoadError) as caught:
        build_network(_agent_with(*twice), "net.hocon", "net")
    assert caught.value.key_path == "tools[0].middleware[1]"
    assert "second PIIMiddleware[email]" in caught.value.reason


def test_validate_reports_supported_and_refused_middleware(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_agent_with({"class": PII, "args": {"pii_type": "url", "strategy": "redact"}})))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_agent_with({"class": "x.y.Z"})))
    out, err = io.StringIO(), io.StringIO()
    assert main_validate([str(good), str(bad)], out, err) == 1
    assert "OK good" in out.getvalue()
    assert f"{bad}: tools[0].middleware[0].class: middleware 'x.y.Z' is not supported" in err.getvalue()


@dataclass(frozen=True, slots=True)
class MottoSettings:
    motto: str


class MottoMiddleware(AgentMiddleware):
    """Adds its motto to the system prompt: visible in what the fake LLM receives."""

    def __init__(self, invocation: Invocation, settings: MottoSettings) -> None:
        super().__init__(invocation)
        self.motto = settings.motto

    async def system_prompt(self) -> str | None:
        return f"Motto: {self.motto}"


def _parse_motto(check: MiddlewareArgs, entry: EntryContext) -> MottoSettings:
    motto = check.get("motto", None, lambda v: isinstance(v, str) and v != "", "a non-empty string")
    if motto is None:
        raise check.fail("motto", "missing")
    check.finish()
    return MottoSettings(motto)


MOTTO_CLASS = MiddlewareClass((MOTTO, "my.pkg.motto.MottoMiddleware"), _parse_motto, lambda s: "MottoMiddleware")


@pytest.fixture
def motto_registered() -> Iterator[None]:
    runtime_registry.plug_in([MOTTO_CLASS], [(MottoSettings, MottoMiddleware)])
    try:
        yield
    finally:
        runtime_registry.unplug([MOTTO_CLASS], [(MottoSettings, MottoMiddleware)])


def test_a_class_plugged_into_the_registry_loads_by_every_name_and_runs(motto_registered: None) -> None:
    spec = build_network(_agent_with({"class": "my.pkg.motto.MottoMiddleware", "args": {"motto": "be brief"}}),
                         "net.hocon", "net")  # fmt: skip
    (config,) = spec.agents["a"].middleware
    assert config.middleware_class is MOTTO_CLASS and config.settings == MottoSettings("be brief")
    with pytest.raises(NetworkLoadError) as caught:
        build_network(_agent_with({"class": MOTTO, "args": {"motto": "x", "tone": "dry"}}), "net.hocon", "net")
    assert caught.value.key_path == "tools[0].middleware[0].args.tone"

    async def body(fake: FakeLlmServer) -> None:
        front = {
            "name": "a",
            "instructions": "Be helpful.",
            "middleware": [{"class": MOTTO, "args": {"motto": "be brief"}}],
        }
        host, factory = make_host({"net": {"llm_config": fake.llm_config(), "tools": [front]}})
        fake.enqueue(Reply.answer("ok"))
        await run_chat(host, "net", "hi")
        system = fake.requests[0].body["messages"][0]
        assert system == {"role": "system", "content": "Be helpful.\n\nMotto: be brief"}
        await factory.aclose()

    run_with_fake_llm(body)


def test_a_name_registered_twice_is_refused(motto_registered: None) -> None:
    with pytest.raises(ValueError, match="registered already"):
        middleware_registry.register(MiddlewareClass((MOTTO,), _parse_motto, lambda s: "Other"))
    with pytest.raises(ValueError, match="have a builder already"):
        runtime_registry.register(MottoSettings, MottoMiddleware)
    with pytest.raises(ValueError, match="registered already"):
        middleware_registry.register(MiddlewareClass((PII,), _parse_motto, lambda s: "Other"))


def test_a_plug_in_with_a_name_taken_registers_nothing() -> None:
    clashing = MiddlewareClass((MOTTO, PII), _parse_motto, lambda s: "MottoMiddleware")
    with pytest.raises(ValueError, match="PIIMiddleware' is registered already"):
        runtime_registry.plug_in([clashing], [(MottoSettings, MottoMiddleware)])
    assert middleware_registry.lookup(MOTTO) is None and runtime_registry.lookup(MottoSettings) is None
    with pytest.raises(NetworkLoadError, match="is not supported"):
        build_network(_agent_with({"class": MOTTO, "args": {"motto": "x"}}), "net.hocon", "net")


def test_neuro_san_s_own_classes_register_themselves() -> None:
    for name in (
        PII,
        SUMMARY,
        "neuro_san.middleware.network_copy_middleware.NetworkCopyMiddleware",
        "neuro_san.middleware.llm_config_tool_selector_middleware.LlmConfigToolSelectorMiddleware",
    ):
        registered = middleware_registry.lookup(name)
        assert registered is not None and registered.origin == "neuro-san", name
    spec = build_network(_agent_with({"class": PII, "args": {"pii_type": "email"}}), "net.hocon", "net")
    assert runtime_registry.lookup(type(spec.agents["a"].middleware[0].settings)) is not None


def test_loading_a_network_with_middleware_imports_no_implementation_and_nothing_of_studio(tmp_path: Path) -> None:
    # The loader reads mem0's and studio's settings only through the registry, so a fresh
    # process that loads a network (with neuro-san's PII middleware) has imported neither.
    path = tmp_path / "net.json"
    path.write_text(json.dumps(_agent_with({"class": PII, "args": {"pii_type": "email"}})))
    code = (
        "import sys; from pathlib import Path; from neuro_san.network.loader import load_network; "
        f"spec = load_network(Path({str(path)!r}), 'net'); assert spec.agents['a'].middleware; "
        "print(sorted(m for m in sys.modules if m.startswith('neuro_san.middleware') or 'studio' in m or 'mem0' in m))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
