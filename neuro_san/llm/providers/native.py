"""The providers with wire formats of their own: Anthropic, Gemini and Bedrock.

``anthropic``
    ``anthropic_api_key`` / env ``ANTHROPIC_API_KEY``; ``anthropic_api_url`` (or
    ``base_url``) / env ``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``);
    ``thinking`` is passed on. A key is required unless the base URL is local.
``gemini``
    ``google_api_key`` / env ``GOOGLE_API_KEY``; ``base_url`` (LangChain's name; neuro-san
    has none); ``top_k``, ``top_p``, ``n``, ``stop`` and the ``thinking_*`` keys become
    ``generationConfig`` fields.
``bedrock``, ``anthropic-bedrock``
    AWS credentials from llm_config, the ``AWS_*`` environment or a profile (SigV4 signing
    needs botocore); ``region_name`` / env ``AWS_REGION``; ``endpoint_url``. ``bedrock``
    with ``beta_use_converse_api: true`` speaks Converse (any model family), otherwise
    Anthropic's format through InvokeModel, as ``anthropic-bedrock`` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.adapters.anthropic import ANTHROPIC_VERSION, AnthropicModel
from neuro_san.llm.adapters.bedrock import BedrockConverseModel, SigV4Signer, botocore_available
from neuro_san.llm.adapters.gemini import GeminiModel
from neuro_san.llm.http import HttpPool
from neuro_san.llm.interface import Model
from neuro_san.llm.resolved import Provider, ResolvedConfig, first, is_local, required_model

ANTHROPIC_BASE = "https://api.anthropic.com"
GEMINI_BASE = "https://generativelanguage.googleapis.com"
#: llm_config keys → Gemini ``generationConfig`` / ``thinkingConfig`` fields.
_GEMINI_GENERATION = {"top_k": "topK", "top_p": "topP", "n": "candidateCount", "stop": "stopSequences"}
_GEMINI_THINKING = {
    "thinking_level": "thinkingLevel",
    "thinking_budget": "thinkingBudget",
    "include_thoughts": "includeThoughts",
}


def _resolve_anthropic(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    base = (first(config, "anthropic_api_url", "base_url") or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE).rstrip(
        "/"
    )
    model_name = required_model(config, provider)
    key = first(config, "anthropic_api_key") or env.get("ANTHROPIC_API_KEY", "")
    key_source = "the ANTHROPIC_API_KEY environment variable (or llm_config 'anthropic_api_key')"
    if not key and not is_local(base):
        raise ConfigurationError(f"no Anthropic API key for model {model_name!r} at {base}: set {key_source}")
    headers = [("anthropic-version", ANTHROPIC_VERSION)]
    if key:
        headers.append(("x-api-key", key))
    # The SDK's base URL has no /v1; tolerate one written by habit.
    path = "/messages" if base.endswith("/v1") else "/v1/messages"
    thinking = config.get("thinking")
    return ResolvedConfig(
        provider=provider,
        model_name=model_name,
        url=base + path,
        base_url=base,
        headers=tuple(headers),
        key_source=key_source,
        options=json.dumps({"thinking": dict(thinking)}, sort_keys=True) if isinstance(thinking, Mapping) else "",
        **common,
    )


def _resolve_gemini(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    base = (first(config, "base_url") or GEMINI_BASE).rstrip("/")
    model_name = required_model(config, provider)
    key = first(config, "google_api_key") or env.get("GOOGLE_API_KEY", "")
    key_source = "the GOOGLE_API_KEY environment variable (or llm_config 'google_api_key')"
    if not key and not is_local(base):
        raise ConfigurationError(f"no Google API key for model {model_name!r}: set {key_source}")
    generation = {wire: config[key] for key, wire in _GEMINI_GENERATION.items() if config.get(key) is not None}
    thinking = {wire: config[key] for key, wire in _GEMINI_THINKING.items() if config.get(key) is not None}
    if thinking:
        generation["thinkingConfig"] = thinking
    version = "" if base.endswith(("/v1beta", "/v1")) else "/v1beta"
    return ResolvedConfig(
        provider=provider,
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
    if not botocore_available():
        return (
            "Bedrock needs botocore for SigV4 signing, which is not installed "
            "(pip install 'neuro-san-grpc[bedrock]')"
        )
    model = str(config.get("model_name") or config.get("model_id") or "")
    if provider == "bedrock" and not is_converse(config) and "anthropic." not in model:
        return (
            "class 'bedrock' without 'beta_use_converse_api: true' speaks each model family's own InvokeModel "
            "format; only Anthropic models are served that way here: set beta_use_converse_api to true"
        )
    return None


def _resolve_bedrock(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    model_id = first(config, "model_name", "model_id")
    if not model_id:
        raise ConfigurationError(f"llm_config for {provider!r} needs 'model_name' (the Bedrock model id)")
    region = first(config, "region_name") or env.get("AWS_REGION", "") or env.get("AWS_DEFAULT_REGION", "")
    if not region:
        raise ConfigurationError(f"{provider}: no AWS region: set llm_config 'region_name' or AWS_REGION")
    base = (first(config, "endpoint_url") or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
    converse = provider == "bedrock" and is_converse(config)
    action = "converse" if converse else "invoke"
    aws = (
        region,
        first(config, "aws_access_key_id") or env.get("AWS_ACCESS_KEY_ID", ""),
        first(config, "aws_secret_access_key") or env.get("AWS_SECRET_ACCESS_KEY", ""),
        first(config, "aws_session_token") or env.get("AWS_SESSION_TOKEN", ""),
        first(config, "credentials_profile_name") or env.get("AWS_PROFILE", ""),
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


def _build_anthropic(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    return AnthropicModel(
        pool, resolved.endpoint(), resolved.model_name, thinking=resolved.option("thinking"), **resolved.settings()
    )


def _build_gemini(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    generation = resolved.option("generation")
    return GeminiModel(pool, resolved.endpoint(), resolved.model_name, extra_fields=generation, **resolved.settings())


def _build_bedrock(resolved: ResolvedConfig, llm_config: Mapping[str, Any], pool: HttpPool) -> Model:
    endpoint = resolved.endpoint(SigV4Signer(*resolved.aws))
    if resolved.option("converse"):
        return BedrockConverseModel(
            pool, endpoint, resolved.model_name, extra_fields=resolved.option("additional"), **resolved.settings()
        )
    # InvokeModel with Anthropic's own message format.
    return AnthropicModel(
        pool, endpoint, resolved.model_name, thinking=resolved.option("thinking"), bedrock=True, **resolved.settings()
    )


_BEDROCK_KEYS = frozenset(
    {
        "region_name", "endpoint_url", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
        "credentials_profile_name", "beta_use_converse_api", "model_kwargs", "model_id", "thinking",
    }
)  # fmt: skip
PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "anthropic",
        _resolve_anthropic,
        _build_anthropic,
        frozenset({"anthropic_api_key", "anthropic_api_url", "base_url", "thinking"}),
    ),
    Provider("anthropic-bedrock", _resolve_bedrock, _build_bedrock, _BEDROCK_KEYS, refusal=bedrock_refusal),
    Provider("bedrock", _resolve_bedrock, _build_bedrock, _BEDROCK_KEYS, refusal=bedrock_refusal),
    Provider(
        "gemini",
        _resolve_gemini,
        _build_gemini,
        frozenset({"google_api_key", "base_url", *_GEMINI_GENERATION, *_GEMINI_THINKING}),
    ),
)
