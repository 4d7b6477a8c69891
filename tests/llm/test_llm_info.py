"""The LLM info table: every model name of neuro-san's default table resolves to a class
we serve, AGENT_LLM_INFO_FILE adds and overrides entries, and what cannot be served is
refused when the network loads, naming the model and the class."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.checks import llm_config_problem
from neuro_san.llm.config import resolve_llm_config
from neuro_san.llm.factory import LlmFactory
from neuro_san.llm.llm_info import default_table, load_llm_info
from neuro_san.llm.providers import provider_names
from neuro_san.network.loader import NetworkLoadError, load_network

UPSTREAM = os.environ.get("NEURO_SAN_UPSTREAM_PYTHON", "")
KEYS = {
    "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GOOGLE_API_KEY": "k", "OPENROUTER_API_KEY": "k",
    "NVIDIA_API_KEY": "k", "AZURE_OPENAI_ENDPOINT": "https://az.example", "AZURE_OPENAI_API_KEY": "k",
    "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
}  # fmt: skip


def test_every_default_table_name_resolves_to_a_served_provider() -> None:
    names = [name for name in default_table() if name not in ("classes", "default_config")]
    assert len(names) > 120
    for name in names:
        resolved = resolve_llm_config({"model_name": name}, KEYS)
        assert resolved.provider in provider_names(), name
        assert llm_config_problem({"model_name": name}, KEYS) is None, name


@pytest.mark.parametrize(
    ("model_name", "provider", "url"),
    [
        ("openrouter/free", "openrouter", "https://openrouter.ai/api/v1/chat/completions"),
        ("nvidia-deepseek-r1", "nvidia", "https://integrate.api.nvidia.com/v1/chat/completions"),
        ("gemma4:e4b", "ollama", "http://localhost:11434/v1/chat/completions"),
        ("gemini-3-flash", "gemini", "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash-preview:generateContent"),
        ("bedrock-claude-sonnet", "anthropic-bedrock",
         "https://bedrock-runtime.us-east-1.amazonaws.com/model/global.anthropic.claude-sonnet-5-5/invoke"),
        ("azure-gpt-4o", "azure-openai", "https://az.example/openai/deployments/gpt-4o-2024-08-06/chat/completions"),
    ],
)  # fmt: skip
def test_provider_urls_and_keys(model_name: str, provider: str, url: str) -> None:
    resolved = resolve_llm_config({"model_name": model_name}, KEYS)
    assert resolved.provider == provider
    assert resolved.url.split("?")[0] == url


def test_nvidia_and_openrouter_take_their_own_key_variables() -> None:
    nvidia = resolve_llm_config({"model_name": "nvidia-llama-3.3-70b-instruct"}, {"NVIDIA_API_KEY": "nv"})
    assert dict(nvidia.headers) == {"Authorization": "Bearer nv"} and nvidia.model_name == "meta/llama-3.3-70b-instruct"
    with pytest.raises(ConfigurationError, match="OPENROUTER_API_KEY"):
        resolve_llm_config({"model_name": "openrouter/auto"}, {"OPENAI_API_KEY": "not-this-one"})
    base = resolve_llm_config({"model_name": "openrouter/auto", "openrouter_api_base": "http://127.0.0.1:9/api/v1"}, {})
    assert base.url == "http://127.0.0.1:9/api/v1/chat/completions"


def test_info_file_adds_and_overrides_entries(tmp_path: Path) -> None:
    info_file = tmp_path / "llm_info.hocon"
    info_file.write_text(
        """{
          "house-model": {"use_model_name": "house-model-v2"},
          "house-model-v2": {"class": "my-vllm"},
          "gpt-4o": {"class": "anthropic"},
          "classes": {"my-vllm": {"extends": "vllm", "args": {"base_url": "http://127.0.0.1:8000/v1"}}},
        }"""
    )
    factory = LlmFactory(env={"AGENT_LLM_INFO_FILE": str(info_file), "ANTHROPIC_API_KEY": "k"})
    house = factory.resolve({"model_name": "house-model"})
    assert (house.provider, house.model_name, house.url) == (
        "vllm",
        "house-model-v2",
        "http://127.0.0.1:8000/v1/chat/completions",
    )
    assert factory.resolve({"model_name": "gpt-4o"}).provider == "anthropic"
    assert factory.resolve({"model_name": "claude-opus"}).model_name == "claude-opus-5-5"  # the rest is kept


def test_info_file_with_python_factories_is_refused(tmp_path: Path) -> None:
    info_file = tmp_path / "llm_info.json"
    info_file.write_text(json.dumps({"classes": {"factories": ["nsx.MyFactory"]}}))
    with pytest.raises(ConfigurationError, match=r"llm_info.json: classes.factories"):
        load_llm_info({"AGENT_LLM_INFO_FILE": str(info_file)})


def _network(tmp_path: Path, llm_config: dict[str, object], **top: object) -> Path:
    path = tmp_path / "net.json"
    front = {"name": "front", "function": {"description": "d"}, "instructions": "i", "llm_config": llm_config}
    path.write_text(json.dumps({"tools": [front], **top}))
    return path


@pytest.mark.parametrize(
    ("llm_config", "message"),
    [
        ({"class": "watsonx", "model_name": "granite"}, "model 'granite' names class 'watsonx'"),
        ({"model_name": "granite-3"}, "'granite-3' is in no LLM info table"),
        ({"class": "bedrock", "model_name": "meta.llama3-70b"}, "beta_use_converse_api"),
    ],
)
def test_unservable_llms_are_refused_when_the_network_loads(
    tmp_path: Path, llm_config: dict[str, object], message: str
) -> None:
    with pytest.raises(NetworkLoadError, match="tools\\[0\\].llm_config") as caught:
        load_network(_network(tmp_path, llm_config), "net")
    assert message in str(caught.value)


def test_a_network_level_info_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NetworkLoadError, match="llm_info_file"):
        load_network(_network(tmp_path, {"model_name": "gpt-4o"}, llm_info_file="x.hocon"), "net")


def test_byok_placeholders_load(tmp_path: Path) -> None:
    spec = load_network(_network(tmp_path, {"model_name": "gpt-5.2", "openai_api_key": "sly_data"}), "net")
    assert spec.front.llm_config["openai_api_key"] == "sly_data"


_UPSTREAM_TABLE = """
import json, os, neuro_san
from pyhocon import ConfigFactory
path = os.path.join(os.path.dirname(neuro_san.__file__), "internals/run_context/langchain/llms/default_llm_info.hocon")
table = ConfigFactory.parse_file(path)
out = {}
for raw, entry in table.items():
    name = raw.strip('"')
    if name in ("classes", "default_config"):
        continue
    target, sent = entry, name
    if "use_model_name" in entry and len(entry.keys()) <= 2:
        sent = entry["use_model_name"]
        target = table.get('"%s"' % sent, None) or table.get(sent)
    out[name] = [target.get("class"), target.get("use_model_name", sent)]
print(json.dumps(out))
"""


@pytest.mark.skipif(not UPSTREAM, reason="set NEURO_SAN_UPSTREAM_PYTHON to compare with neuro-san 0.7's table")
def test_our_table_resolves_every_upstream_name_as_neuro_san_does(tmp_path: Path) -> None:
    result = subprocess.run(
        [UPSTREAM, "-c", _UPSTREAM_TABLE], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    upstream = json.loads(result.stdout)
    info = load_llm_info({})
    for name, (class_name, sent) in upstream.items():
        resolved = info.resolve({"model_name": name})
        assert (resolved.get("class"), resolved.get("model_name")) == (class_name, sent), name


def test_gemini_takes_neuro_sans_class_defaults_unless_set() -> None:
    keys = {"GOOGLE_API_KEY": "k"}
    default = resolve_llm_config({"model_name": "gemini-2.5-flash"}, keys)
    assert (default.temperature, default.max_attempts) == (0.7, 7)
    assert resolve_llm_config({"model_name": "gemini-3-flash", "temperature": 1.0}, keys).temperature == 1.0


def test_without_botocore_bedrock_is_refused_with_this_projects_install_hint() -> None:
    # A fresh interpreter in which botocore cannot be imported, as on an install without
    # the bedrock extra.
    code = (
        "import sys; sys.modules['botocore'] = None; sys.modules['botocore.auth'] = None\n"
        "from neuro_san.llm.checks import llm_config_problem\n"
        "print(llm_config_problem({'model_name': 'bedrock-claude-sonnet'}, env={}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1]
    )
    assert "pip install 'neuro-san-grpc[bedrock]'" in result.stdout, result.stdout + result.stderr
