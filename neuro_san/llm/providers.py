"""The providers beyond OpenAI, Azure, Anthropic and Ollama (those are in :mod:`config`).

Each function turns a (table-resolved) llm_config into a
:class:`~neuro_san.llm.config.ResolvedConfig`. The OpenAI-compatible services differ only
in their default base URL, their key's llm_config key and environment variable, and
where a base URL may be given:

=============  ==========================================  ===========================  ======================
class          default base URL                            key (llm_config / env)       base URL keys / env
=============  ==========================================  ===========================  ======================
openrouter     https://openrouter.ai/api/v1                openrouter_api_key /         openrouter_api_base,
                                                           OPENROUTER_API_KEY           base_url / OPENROUTER_API_BASE
nvidia         https://integrate.api.nvidia.com/v1         nvidia_api_key /             base_url, nvidia_base_url /
                                                           NVIDIA_API_KEY               NVIDIA_BASE_URL
groq           https://api.groq.com/openai/v1              groq_api_key / GROQ_API_KEY  base_url / GROQ_BASE_URL
mistral        https://api.mistral.ai/v1                   mistral_api_key /            base_url / MISTRAL_BASE_URL
                                                           MISTRAL_API_KEY
deepseek       https://api.deepseek.com                    deepseek_api_key /           base_url / DEEPSEEK_BASE_URL
                                                           DEEPSEEK_API_KEY
vllm           http://localhost:8000/v1                    vllm_api_key / VLLM_API_KEY  base_url / VLLM_BASE_URL
lmstudio       http://localhost:1234/v1                    (none)                       base_url / LMSTUDIO_BASE_URL
=============  ==========================================  ===========================  ======================

``openai_api_base`` and ``openai_api_key`` are accepted by all of them too. A key is
required unless the base URL is local.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from neuro_san.core.errors import ConfigurationError


@dataclass(frozen=True)
class CompatibleService:
    base: str
    key_keys: tuple[str, ...]
    key_env: str
    base_keys: tuple[str, ...]
    base_env: str


COMPATIBLE: Mapping[str, CompatibleService] = {
    "openrouter": CompatibleService(
        "https://openrouter.ai/api/v1", ("openrouter_api_key",), "OPENROUTER_API_KEY",
        ("openrouter_api_base", "base_url"), "OPENROUTER_API_BASE",
    ),
    "nvidia": CompatibleService(
        "https://integrate.api.nvidia.com/v1", ("nvidia_api_key",), "NVIDIA_API_KEY",
        ("base_url", "nvidia_base_url"), "NVIDIA_BASE_URL",
    ),
    "groq": CompatibleService(
        "https://api.groq.com/openai/v1", ("groq_api_key",), "GROQ_API_KEY", ("base_url",), "GROQ_BASE_URL"
    ),
    "mistral": CompatibleService(
        "https://api.mistral.ai/v1", ("mistral_api_key",), "MISTRAL_API_KEY", ("base_url",), "MISTRAL_BASE_URL"
    ),
    "deepseek": CompatibleService(
        "https://api.deepseek.com", ("deepseek_api_key",), "DEEPSEEK_API_KEY", ("base_url",), "DEEPSEEK_BASE_URL"
    ),
    "vllm": CompatibleService(
        "http://localhost:8000/v1", ("vllm_api_key",), "VLLM_API_KEY", ("base_url",), "VLLM_BASE_URL"
    ),
    "lmstudio": CompatibleService("http://localhost:1234/v1", (), "", ("base_url",), "LMSTUDIO_BASE_URL"),
}  # fmt: skip

GEMINI_BASE = "https://generativelanguage.googleapis.com"
#: llm_config keys → Gemini ``generationConfig`` / ``thinkingConfig`` fields.
_GEMINI_GENERATION = {"top_k": "topK", "top_p": "topP", "n": "candidateCount", "stop": "stopSequences"}
_GEMINI_THINKING = {
    "thinking_level": "thinkingLevel",
    "thinking_budget": "thinkingBudget",
    "include_thoughts": "includeThoughts",
}


def resolve_compatible(provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]) -> Any:
    from neuro_san.llm.config import ResolvedConfig, _first, _is_local, _required_model

    service = COMPATIBLE[provider]
    base = (
        _first(config, *service.base_keys, "openai_api_base") or env.get(service.base_env, "") or service.base
    ).rstrip("/")
    key = _first(config, *service.key_keys, "openai_api_key") or (
        env.get(service.key_env, "") if service.key_env else ""
    )
    key_source = (
        f"the {service.key_env} environment variable (or llm_config '{service.key_keys[0]}')" if service.key_env else ""
    )
    model_name = _required_model(config, provider)
    if not key and service.key_env and not _is_local(base):
        raise ConfigurationError(f"no {provider} API key for model {model_name!r} at {base}: set {key_source}")
    return ResolvedConfig(
        provider=provider,
        model_name=model_name,
        url=f"{base}/chat/completions",
        base_url=base,
        headers=(("Authorization", f"Bearer {key}"),) if key else (),
        key_source=key_source,
        **common,
    )


def resolve_gemini(config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]) -> Any:
    from neuro_san.llm.config import ResolvedConfig, _first, _is_local, _required_model

    # LangChain's Gemini class names its endpoint override base_url; neuro-san has none.
    base = (_first(config, "base_url") or GEMINI_BASE).rstrip("/")
    model_name = _required_model(config, "gemini")
    key = _first(config, "google_api_key") or env.get("GOOGLE_API_KEY", "")
    key_source = "the GOOGLE_API_KEY environment variable (or llm_config 'google_api_key')"
    if not key and not _is_local(base):
        raise ConfigurationError(f"no Google API key for model {model_name!r}: set {key_source}")
    generation = {wire: config[key] for key, wire in _GEMINI_GENERATION.items() if config.get(key) is not None}
    thinking = {wire: config[key] for key, wire in _GEMINI_THINKING.items() if config.get(key) is not None}
    if thinking:
        generation["thinkingConfig"] = thinking
    version = "" if base.endswith(("/v1beta", "/v1")) else "/v1beta"
    return ResolvedConfig(
        provider="gemini",
        model_name=model_name,
        url=f"{base}{version}/models/{quote(model_name, safe='')}:generateContent",
        base_url=base,
        headers=(("x-goog-api-key", key),) if key else (),
        key_source=key_source,
        options=json.dumps({"generation": generation}, sort_keys=True),
        **common,
    )


def is_converse(config: Mapping[str, Any]) -> bool:
    value = config.get("beta_use_converse_api")
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def bedrock_refusal(provider: str, config: Mapping[str, Any]) -> str | None:
    """Why a Bedrock llm_config cannot be served, or None."""
    from neuro_san.llm.bedrock import botocore_available

    if not botocore_available():
        return "Bedrock needs botocore for SigV4 signing, which is not installed (pip install 'neuro-san[bedrock]')"
    model = str(config.get("model_name") or config.get("model_id") or "")
    if provider == "bedrock" and not is_converse(config) and "anthropic." not in model:
        return (
            "class 'bedrock' without 'beta_use_converse_api: true' speaks each model family's own InvokeModel "
            "format; only Anthropic models are served that way here: set beta_use_converse_api to true"
        )
    return None


def resolve_bedrock(provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]) -> Any:
    from neuro_san.llm.config import ResolvedConfig, _first

    refusal = bedrock_refusal(provider, config)
    if refusal:
        raise ConfigurationError(refusal)
    model_id = _first(config, "model_name", "model_id")
    if not model_id:
        raise ConfigurationError(f"llm_config for {provider!r} needs 'model_name' (the Bedrock model id)")
    region = _first(config, "region_name") or env.get("AWS_REGION", "") or env.get("AWS_DEFAULT_REGION", "")
    if not region:
        raise ConfigurationError(f"{provider}: no AWS region: set llm_config 'region_name' or AWS_REGION")
    base = (_first(config, "endpoint_url") or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
    converse = provider == "bedrock" and is_converse(config)
    action = "converse" if converse else "invoke"
    aws = (
        region,
        _first(config, "aws_access_key_id") or env.get("AWS_ACCESS_KEY_ID", ""),
        _first(config, "aws_secret_access_key") or env.get("AWS_SECRET_ACCESS_KEY", ""),
        _first(config, "aws_session_token") or env.get("AWS_SESSION_TOKEN", ""),
        _first(config, "credentials_profile_name") or env.get("AWS_PROFILE", ""),
    )
    options: dict[str, Any] = {"converse": converse}
    if isinstance(config.get("thinking"), Mapping):
        options["thinking"] = dict(config["thinking"])
    if converse and isinstance(config.get("model_kwargs"), Mapping):
        options["additional"] = dict(config["model_kwargs"])
    return ResolvedConfig(
        provider=provider,
        model_name=model_id,
        url=f"{base}/model/{quote(model_id, safe='')}/{action}",
        base_url=base,
        key_source="llm_config 'aws_access_key_id'/'aws_secret_access_key', the AWS_* environment or profile",
        options=json.dumps(options, sort_keys=True),
        aws=aws,
        **common,
    )
