"""Networks per provider load from files and chat (a tool call and an answer) through the
provider fake in each provider's own wire format; with NEURO_SAN_UPSTREAM_PYTHON set,
neuro-san 0.7.15's own ``music_nerd_pro_llm_*`` networks do too, unchanged, pointed at
the fake with AGENT_LLM_OVERRIDE (endpoint keys only, so each keeps its provider)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from neuro_san.llm.factory import LlmFactory
from neuro_san.network.loader import load_network
from neuro_san.network.spec import NetworkSpec
from neuro_san.runtime.coded_tools import CodedToolResolver
from neuro_san.runtime.network_runner import NetworkRunner
from tests.fakes import provider_bodies as bodies
from tests.fakes.provider_fake import ProviderFake, Seen
from tests.support.runtime import run_chat

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")
AWS = ("AKIDNETWORKS", "network-secret-key", "us-west-2")
AWS_ENV = {"AWS_ACCESS_KEY_ID": AWS[0], "AWS_SECRET_ACCESS_KEY": AWS[1], "AWS_REGION": AWS[2]}
TOOL = """
from neuro_san.interfaces.coded_tool import CodedTool

class Accountant(CodedTool):
    def invoke(self, args, sly_data):
        return {"running_cost": float(args.get("running_cost", 0)) + 1.0}
"""

#: provider → (llm_config with FAKE for the fake's URL, env, request kind, path, auth header, model sent)
PROVIDERS: dict[str, tuple[dict[str, Any], dict[str, str], str, str, tuple[str, str] | None, str | None]] = {
    "openai": ({"model_name": "gpt-4o", "openai_api_base": "FAKE/v1"}, {"OPENAI_API_KEY": "sk-o"},
               "openai", "/v1/chat/completions", ("authorization", "Bearer sk-o"), "gpt-4o-2024-08-06"),
    "azure-openai": ({"class": "azure-openai", "model_name": "gpt-5.2", "deployment_name": "gpt-5-2",
                      "azure_endpoint": "FAKE"}, {"AZURE_OPENAI_API_KEY": "az"},
                     "openai", "/openai/deployments/gpt-5-2/chat/completions", ("api-key", "az"), None),
    "anthropic": ({"model_name": "claude-sonnet-5", "anthropic_api_url": "FAKE"}, {"ANTHROPIC_API_KEY": "an"},
                  "anthropic", "/v1/messages", ("x-api-key", "an"), "claude-sonnet-5"),
    "anthropic-bedrock": ({"model_name": "bedrock-claude-sonnet", "endpoint_url": "FAKE"}, AWS_ENV,
                          "bedrock-invoke", "/model/global.anthropic.claude-sonnet-5-5/invoke", None, None),
    "bedrock": ({"class": "bedrock", "model_name": "amazon.nova-lite-v1:0", "beta_use_converse_api": True,
                 "endpoint_url": "FAKE"}, AWS_ENV,
                "bedrock-converse", "/model/amazon.nova-lite-v1:0/converse", None, None),
    "gemini": ({"model_name": "gemini-3-flash", "temperature": 1.0, "thinking_level": "minimal", "base_url": "FAKE"},
               {"GOOGLE_API_KEY": "g"}, "gemini", "/v1beta/models/gemini-3-flash-preview:generateContent",
               ("x-goog-api-key", "g"), None),
    "ollama": ({"model_name": "gemma4:e4b", "reasoning": False, "base_url": "FAKE"}, {},
               "openai", "/v1/chat/completions", None, "gemma4:e4b"),
    "openrouter": ({"model_name": "openrouter/free", "openrouter_api_base": "FAKE/api/v1"},
                   {"OPENROUTER_API_KEY": "or"},
                   "openai", "/api/v1/chat/completions", ("authorization", "Bearer or"), "openrouter/free"),
    "nvidia": ({"model_name": "nvidia-llama-3.3-70b-instruct", "base_url": "FAKE/v1"}, {"NVIDIA_API_KEY": "nv"},
               "openai", "/v1/chat/completions", ("authorization", "Bearer nv"), "meta/llama-3.3-70b-instruct"),
    "deepseek": ({"class": "deepseek", "model_name": "deepseek-chat", "base_url": "FAKE"}, {"DEEPSEEK_API_KEY": "ds"},
                 "openai", "/chat/completions", ("authorization", "Bearer ds"), "deepseek-chat"),
    "groq": ({"class": "groq", "model_name": "llama-3.3-70b-versatile", "base_url": "FAKE/openai/v1"},
             {"GROQ_API_KEY": "gq"}, "openai", "/openai/v1/chat/completions", ("authorization", "Bearer gq"), None),
    "mistral": ({"class": "mistral", "model_name": "mistral-large-latest", "base_url": "FAKE/v1"},
                {"MISTRAL_API_KEY": "mi"}, "openai", "/v1/chat/completions", ("authorization", "Bearer mi"), None),
    "vllm": ({"class": "vllm", "model_name": "Qwen/Qwen3-8B", "base_url": "FAKE/v1"}, {},
             "openai", "/v1/chat/completions", None, "Qwen/Qwen3-8B"),
    "lmstudio": ({"class": "lmstudio", "model_name": "qwen3-8b", "base_url": "FAKE/v1"}, {},
                 "openai", "/v1/chat/completions", None, None),
}  # fmt: skip


def _tool_then_answer(seen: Seen) -> tuple[int, Any]:
    """Call Accountant once per conversation in the request's own format, then answer."""
    raw = seen.raw.decode()
    done = any(marker in raw for marker in ('"role": "tool"', "tool_result", "functionResponse", "toolResult"))
    answer = '{"answer": "The Beatles", "running_cost": 1.0}'
    args = {"running_cost": 0.0}
    if seen.kind == "openai":
        reply = (
            bodies.chat_completion(answer) if done else bodies.chat_completion(tool_calls=[("c1", "Accountant", args)])
        )
    elif seen.kind in ("anthropic", "bedrock-invoke"):
        reply = (
            bodies.anthropic_message(answer) if done else bodies.anthropic_message(tool_use=("t1", "Accountant", args))
        )
    elif seen.kind == "gemini":
        reply = bodies.gemini_reply(answer) if done else bodies.gemini_reply(function_call=("Accountant", args))
    else:
        reply = bodies.converse_reply(answer) if done else bodies.converse_reply(tool_use=("u1", "Accountant", args))
    return 200, reply


class _Source:
    def __init__(self, spec: NetworkSpec) -> None:
        self._networks = {spec.name: spec}

    def get(self, name: str) -> NetworkSpec | None:
        return self._networks.get(name)

    def networks(self) -> Mapping[str, NetworkSpec]:
        return self._networks


def _chat_through_fake(
    network_file: Path | None, llm_config: dict[str, Any] | None, env: dict[str, str], tmp_path: Path, name: str
) -> tuple[list[Any], ProviderFake]:
    tools = tmp_path / "coded_tools" / name
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "accountant.py").write_text(TOOL)

    async def main() -> tuple[list[Any], ProviderFake]:
        async with ProviderFake(aws=AWS, rule=_tool_then_answer) as fake:
            filled = {k: v.replace("FAKE", fake.url) if isinstance(v, str) else v for k, v in env.items()}
            path = network_file or _own_network(tmp_path, name, llm_config or {}, fake.url)
            os.environ.update(filled)  # the load-time check reads the process environment
            try:
                spec = load_network(path, name)
            finally:
                for key in filled:
                    os.environ.pop(key, None)
            factory = LlmFactory(env=filled)
            host = NetworkRunner(_Source(spec), factory, CodedToolResolver([tmp_path / "coded_tools"]))
            try:
                messages = await asyncio.wait_for(run_chat(host, name, "Who wrote Yellow Submarine?", maximal=True), 30)
            finally:
                await factory.aclose()
            return messages, fake

    return asyncio.run(main())


def _own_network(tmp_path: Path, name: str, llm_config: dict[str, Any], url: str) -> Path:
    config = {k: v.replace("FAKE", url) if isinstance(v, str) else v for k, v in llm_config.items()}
    front = {
        "name": "MusicHelper",
        "function": {"description": "Music questions."},
        "instructions": "Answer music questions; call Accountant once per question.",
        "tools": ["Accountant"],
    }
    accountant = {
        "name": "Accountant",
        "function": {
            "description": "Running cost.",
            "parameters": {
                "type": "object",
                "properties": {"running_cost": {"type": "float"}},
                "required": ["running_cost"],
            },
        },
        "class": "accountant.Accountant",
    }
    path = tmp_path / f"{name}.hocon"
    path.write_text(json.dumps({"llm_config": config, "tools": [front, accountant]}, indent=1))
    return path


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_network_per_provider_chats_in_its_wire_format(tmp_path: Path, provider: str) -> None:
    llm_config, env, kind, path, auth, model = PROVIDERS[provider]
    name = "music_" + provider.replace("-", "_")
    messages, fake = _chat_through_fake(None, llm_config, env, tmp_path, name)
    assert messages[-1].text == '{"answer": "The Beatles", "running_cost": 1.0}'
    assert [r.kind for r in fake.requests] == [kind, kind]
    assert all(r.path == path for r in fake.requests), [r.path for r in fake.requests]
    assert all(r.signature_problem is None for r in fake.requests)
    if auth is not None:
        assert fake.requests[0].headers.get(auth[0]) == auth[1]
    if model is not None:
        assert fake.requests[0].body["model"] == model
    if provider == "ollama":
        assert fake.requests[0].body["reasoning_effort"] == "none"


#: upstream network → env pointing its provider at the fake (endpoint keys via the override).
UPSTREAM_NETWORKS = {
    "music_nerd_pro_llm_anthropic": ({"ANTHROPIC_API_KEY": "an", "ANTHROPIC_BASE_URL": "FAKE"}, "anthropic"),
    "music_nerd_pro_llm_azure": ({"AZURE_OPENAI_API_KEY": "az", "AZURE_OPENAI_ENDPOINT": "FAKE"}, "openai"),
    "music_nerd_pro_llm_bedrock_claude": (
        {**AWS_ENV, "AGENT_LLM_OVERRIDE": json.dumps({"endpoint_url": "FAKE"})}, "bedrock-invoke"
    ),
    "music_nerd_pro_llm_gemini": (
        {"GOOGLE_API_KEY": "g", "AGENT_LLM_OVERRIDE": json.dumps({"base_url": "FAKE"})}, "gemini"
    ),
    "music_nerd_pro_llm_ollama": ({"AGENT_LLM_OVERRIDE": json.dumps({"base_url": "FAKE"})}, "openai"),
    "music_nerd_pro_llm_openrouter": ({"OPENROUTER_API_KEY": "or", "OPENROUTER_API_BASE": "FAKE/api/v1"}, "openai"),
}  # fmt: skip


def _upstream_registries() -> Path:
    script = "import neuro_san, os; print(os.path.dirname(neuro_san.__file__))"
    out = subprocess.run([UPSTREAM, "-c", script], capture_output=True, text=True, timeout=60, cwd="/")
    return Path(out.stdout.strip()) / "registries"


@pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to run neuro-san 0.7's own networks")
def test_upstream_music_nerd_pro_llm_networks_chat_through_the_fake(tmp_path: Path) -> None:
    registries = _upstream_registries()
    shipped = sorted(p.stem for p in registries.glob("music_nerd_pro_llm_*.hocon"))
    assert shipped == sorted(UPSTREAM_NETWORKS), shipped
    for name, (env, kind) in UPSTREAM_NETWORKS.items():
        messages, fake = _chat_through_fake(registries / f"{name}.hocon", None, env, tmp_path, name)
        assert [r.kind for r in fake.requests] == [kind, kind], name
        assert all(r.signature_problem is None for r in fake.requests), name
        # structure_formats "json": the answer's JSON becomes the structure.
        assert messages[-1].structure == {"answer": "The Beatles", "running_cost": 1.0}, name


@pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to run neuro-san 0.7's own networks")
def test_upstream_byok_network_uses_the_key_from_sly_data(tmp_path: Path) -> None:
    name = "music_nerd_pro_sly_api_key"
    path = _upstream_registries() / f"{name}.hocon"
    tools = tmp_path / "coded_tools" / name
    tools.mkdir(parents=True)
    (tools / "accountant.py").write_text(TOOL)

    async def main() -> tuple[list[Any], ProviderFake]:
        async with ProviderFake(rule=_tool_then_answer) as fake:
            spec = load_network(path, name)
            factory = LlmFactory(env={"AGENT_LLM_OVERRIDE": json.dumps({"openai_api_base": fake.url + "/v1"})})
            host = NetworkRunner(_Source(spec), factory, CodedToolResolver([tmp_path / "coded_tools"]))
            sly = {"llm_config": {"openai_api_key": "sk-user-byok"}, "running_cost": 0.0}
            try:
                messages = await run_chat(host, name, "Who wrote Help?", maximal=True, sly_data=sly)
            finally:
                await factory.aclose()
            return messages, fake

    messages, fake = asyncio.run(main())
    assert [r.headers["authorization"] for r in fake.requests] == ["Bearer sk-user-byok"] * 2
    assert all("sk-user-byok" not in repr(m) for m in messages)
    assert messages[-1].sly_data == {"running_cost": 0.0}  # allow.to_upstream: running_cost only
