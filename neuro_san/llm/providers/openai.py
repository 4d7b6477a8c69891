"""The providers that speak OpenAI's Chat Completions: OpenAI, Azure OpenAI, Ollama and
the OpenAI-compatible services.

``openai``
    ``openai_api_key`` / env ``OPENAI_API_KEY``; ``openai_api_base`` or ``base_url`` /
    env ``OPENAI_API_BASE`` (any OpenAI-compatible server: vLLM, llama.cpp, LM Studio…);
    ``openai_organization`` / env ``OPENAI_ORG_ID`` is sent as ``OpenAI-Organization``. A
    key is required unless the base URL is local. No ``model_name``: ``gpt-4o``.
``azure-openai``
    endpoint from ``azure_endpoint`` / ``openai_api_base`` / env ``AZURE_OPENAI_ENDPOINT``;
    deployment from ``deployment_name`` / ``azure_deployment`` / env
    ``AZURE_OPENAI_DEPLOYMENT_NAME`` / ``model_name``; version from ``openai_api_version`` /
    ``api_version`` / env ``OPENAI_API_VERSION``; key from ``openai_api_key`` / env
    ``AZURE_OPENAI_API_KEY`` (``api-key`` header), or a bearer token from env
    ``AZURE_OPENAI_AD_TOKEN``.
``ollama``
    ``base_url`` / ``openai_api_base``, default ``http://localhost:11434/v1`` (``/v1`` is
    appended when missing, since Ollama's OpenAI-compatible API lives there); no key.

The OpenAI-compatible services differ only in their default base URL, their key's
llm_config key and environment variable, and where a base URL may be given:

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

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.adapters.openai_chat import OpenAIChatModel, openai_instruction_role
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import Model
from neuro_san.llm.resolved import Provider, ResolvedConfig, first, is_local, required_model

DEFAULT_OPENAI_MODEL = "gpt-4o"
OPENAI_BASE = "https://api.openai.com/v1"
OLLAMA_BASE = "http://localhost:11434/v1"
AZURE_API_VERSION = "2024-10-21"


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


def _resolve_openai(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    base = (first(config, "openai_api_base", "base_url") or env.get("OPENAI_API_BASE") or OPENAI_BASE).rstrip("/")
    key = first(config, "openai_api_key") or env.get("OPENAI_API_KEY", "")
    key_source = "the OPENAI_API_KEY environment variable (or llm_config 'openai_api_key')"
    model_name = str(config.get("model_name") or DEFAULT_OPENAI_MODEL)
    if not key and not is_local(base):
        raise ConfigurationError(f"no OpenAI API key for model {model_name!r} at {base}: set {key_source}")
    return _chat_completions(provider, model_name, base, key, key_source, config, env, common)


def _resolve_ollama(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    base = (first(config, "base_url", "openai_api_base") or OLLAMA_BASE).rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    model_name = required_model(config, provider)
    # neuro-san's ChatOllama takes "reasoning" (think or not); Ollama's OpenAI API
    # spells the same switch reasoning_effort.
    extra = ""
    reasoning = config.get("reasoning")
    if isinstance(reasoning, bool | str):
        effort = reasoning if isinstance(reasoning, str) else ("medium" if reasoning else "none")
        extra = json.dumps({"extra_body": {"reasoning_effort": effort}})
    key = first(config, "openai_api_key")
    return _chat_completions(
        provider, model_name, base, key, "llm_config 'openai_api_key'", config, env, common, options=extra
    )


def _chat_completions(
    provider: str,
    model_name: str,
    base: str,
    key: str,
    key_source: str,
    config: Mapping[str, Any],
    env: Mapping[str, str],
    common: dict[str, Any],
    options: str = "",
) -> ResolvedConfig:
    headers = [("Authorization", f"Bearer {key}")] if key else []
    organization = first(config, "openai_organization") or env.get("OPENAI_ORG_ID", "")
    if organization:
        headers.append(("OpenAI-Organization", organization))
    return ResolvedConfig(
        provider=provider,
        model_name=model_name,
        url=f"{base}/chat/completions",
        base_url=base,
        headers=tuple(headers),
        key_source=key_source,
        options=options,
        **common,
    )


def _resolve_azure(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    endpoint = first(config, "azure_endpoint", "openai_api_base") or env.get("AZURE_OPENAI_ENDPOINT", "")
    if not endpoint:
        raise ConfigurationError(
            "azure-openai needs an endpoint: set the AZURE_OPENAI_ENDPOINT environment "
            "variable (or llm_config 'azure_endpoint')"
        )
    deployment = (
        first(config, "deployment_name", "azure_deployment")
        or env.get("AZURE_OPENAI_DEPLOYMENT_NAME")
        or str(config.get("model_name") or "")
    )
    if not deployment:
        raise ConfigurationError(
            "azure-openai needs a deployment: set AZURE_OPENAI_DEPLOYMENT_NAME (or llm_config "
            "'deployment_name' or 'model_name')"
        )
    version = first(config, "openai_api_version", "api_version") or env.get("OPENAI_API_VERSION") or AZURE_API_VERSION
    key = first(config, "openai_api_key") or env.get("AZURE_OPENAI_API_KEY", "")
    key_source = "the AZURE_OPENAI_API_KEY environment variable (or llm_config 'openai_api_key')"
    if key:
        headers: tuple[tuple[str, str], ...] = (("api-key", key),)
    elif env.get("AZURE_OPENAI_AD_TOKEN"):
        headers = (("Authorization", f"Bearer {env['AZURE_OPENAI_AD_TOKEN']}"),)
        key_source = "the AZURE_OPENAI_AD_TOKEN environment variable"
    else:
        raise ConfigurationError(f"no Azure OpenAI API key: set {key_source}")
    base = endpoint.rstrip("/")
    return ResolvedConfig(
        provider=provider,
        model_name=str(config.get("model_name") or deployment),
        url=f"{base}/openai/deployments/{deployment}/chat/completions?api-version={version}",
        base_url=base,
        headers=headers,
        key_source=key_source,
        **common,
    )


def _resolve_compatible(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    service = COMPATIBLE[provider]
    base = (
        first(config, *service.base_keys, "openai_api_base") or env.get(service.base_env, "") or service.base
    ).rstrip("/")
    key = first(config, *service.key_keys, "openai_api_key") or (
        env.get(service.key_env, "") if service.key_env else ""
    )
    key_source = (
        f"the {service.key_env} environment variable (or llm_config '{service.key_keys[0]}')" if service.key_env else ""
    )
    model_name = required_model(config, provider)
    if not key and service.key_env and not is_local(base):
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


def _build_openai(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    """OpenAI's own rules (reasoning models, the developer role) for OpenAI and Azure."""
    return OpenAIChatModel(
        pool,
        resolved.endpoint(),
        resolved.model_name,
        instruction_role=openai_instruction_role(resolved.model_name),
        extra_fields=resolved.option("extra_body"),
        **resolved.settings(),
    )


def _build_compatible(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    """OpenAI's reasoning-model rules are OpenAI's; other servers keep the plain ones."""
    return OpenAIChatModel(
        pool,
        resolved.endpoint(),
        resolved.model_name,
        reasoning=False,
        instruction_role="system",
        extra_fields=resolved.option("extra_body"),
        **resolved.settings(),
    )


_OPENAI_KEYS = frozenset({"openai_api_key", "openai_api_base", "base_url", "openai_organization"})
PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", _resolve_openai, _build_openai, _OPENAI_KEYS),
    Provider(
        "azure-openai",
        _resolve_azure,
        _build_openai,
        frozenset(
            {"azure_endpoint", "openai_api_base", "deployment_name", "azure_deployment", "openai_api_version"}
            | {"api_version", "openai_api_key"}
        ),
        aliases=("azure_openai", "azure"),
    ),
    Provider("ollama", _resolve_ollama, _build_compatible, _OPENAI_KEYS | {"reasoning"}),
    *(
        Provider(
            name,
            _resolve_compatible,
            _build_compatible,
            frozenset({*service.key_keys, *service.base_keys, "openai_api_key", "openai_api_base"}),
        )
        for name, service in COMPATIBLE.items()
    ),
)
