"""From an agent's ``llm_config`` to a shared :class:`~neuro_san.llm.interface.Model`.

This is the *provider* layer: it knows each vendor's base URL, auth header, environment
variables and config keys, and produces an :class:`~neuro_san.llm.http.Endpoint` for a
wire-protocol adapter (:mod:`~neuro_san.llm.openai_chat`, :mod:`~neuro_san.llm.anthropic`).

Resolution follows neuro-san's ``llm_config`` conventions:

``class``
    one of :data:`PROVIDERS` (``scripted`` is the offline model in
    :mod:`neuro_san.llm.scripted`; the OpenAI-compatible services, Gemini and Bedrock are
    resolved in :mod:`neuro_san.llm.providers`). Without it the provider comes from
    ``model_name`` through the LLM info table (:mod:`neuro_san.llm.llm_info`, extended by
    ``AGENT_LLM_INFO_FILE``), as neuro-san resolves it. An empty ``llm_config`` means
    OpenAI ``gpt-4o`` (:data:`DEFAULT_OPENAI_MODEL`).
``model_name``, ``temperature``, ``max_tokens``
    Passed to the provider (``temperature`` only when set; Anthropic's ``max_tokens``
    defaults to 4096 because the API requires one).
``openai_api_key`` / env ``OPENAI_API_KEY``;
``openai_api_base`` or ``base_url`` / env ``OPENAI_API_BASE``
    OpenAI or any OpenAI-compatible server (vLLM, llama.cpp, LM Studio…). A key is
    required unless the base URL is local (localhost, 127.0.0.1, ::1).
``openai_organization``
    Sent as ``OpenAI-Organization``.
``anthropic_api_key`` / env ``ANTHROPIC_API_KEY``;
``anthropic_api_url`` / env ``ANTHROPIC_BASE_URL``
    Anthropic (default ``https://api.anthropic.com``).
Azure OpenAI (``class: azure-openai``)
    endpoint from ``azure_endpoint`` / ``openai_api_base`` / env ``AZURE_OPENAI_ENDPOINT``;
    deployment from ``deployment_name`` / ``azure_deployment`` / env
    ``AZURE_OPENAI_DEPLOYMENT_NAME`` / ``model_name``; version from
    ``openai_api_version`` / ``api_version`` / env ``OPENAI_API_VERSION``; key from
    ``openai_api_key`` / env ``AZURE_OPENAI_API_KEY`` (``api-key`` header), or a bearer
    token from env ``AZURE_OPENAI_AD_TOKEN``.
Ollama (``class: ollama``)
    ``base_url`` / ``openai_api_base``, default ``http://localhost:11434/v1`` (``/v1`` is
    appended when missing, since Ollama's OpenAI-compatible API lives there); no key.
``max_attempts`` (default 3; or neuro-san's ``max_retries`` + 1);
``request_timeout`` / ``timeout``
    Attempts per call and seconds per attempt (default 120).

Other keys (``use_responses_api``, ``verbose``, ``streaming``…) are accepted and ignored,
with one debug log per key. A value set to the string ``"sly_data"`` (neuro-san's
bring-your-own-key) is replaced per request by :mod:`neuro_san.llm.byok` before
resolution; one left over here is a ConfigurationError.

``AGENT_LLM_OVERRIDE`` (env, a JSON object) is overlaid on every llm_config by
:class:`~neuro_san.llm.factory.LlmFactory` (which turns resolved configs into shared
models), so any network can be pointed at a chosen endpoint and model without editing
files, scripted agents included.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.anthropic import ANTHROPIC_VERSION
from neuro_san.llm.http import Endpoint
from neuro_san.llm.llm_info import LlmInfo, default_table
from neuro_san.llm.providers import COMPATIBLE, resolve_bedrock, resolve_compatible, resolve_gemini

logger = logging.getLogger(__name__)

#: Connections per LLM endpoint (see :data:`neuro_san.llm.http.DEFAULT_CONNECTION_LIMIT`).
PROVIDERS = (
    "openai", "azure-openai", "anthropic", "anthropic-bedrock", "bedrock", "gemini", "ollama", *COMPATIBLE, "scripted",
)  # fmt: skip
_DEFAULT_INFO = LlmInfo(default_table())
DEFAULT_OPENAI_MODEL = "gpt-4o"
OPENAI_BASE = "https://api.openai.com/v1"
ANTHROPIC_BASE = "https://api.anthropic.com"
OLLAMA_BASE = "http://localhost:11434/v1"
AZURE_API_VERSION = "2024-10-21"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_ATTEMPTS = 3

_CLASS_ALIASES = {
    "azure_openai": "azure-openai",
    "azure": "azure-openai",
    # neuro-san's own test model (its chat_mock_llm_echo network): it only echoes the input,
    # which is what the offline scripted model does with no tools and no reply template.
    "neuro_san.test.llms.chat_mock_llm.chatmockllm": "scripted",
}
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
KNOWN_KEYS = frozenset(
    {
        "class", "model_name", "temperature", "max_tokens", "max_attempts", "max_retries",
        "request_timeout", "timeout", "openai_api_key", "openai_api_base", "base_url",
        "openai_organization", "anthropic_api_key", "anthropic_api_url", "azure_endpoint",
        "deployment_name", "azure_deployment", "openai_api_version", "api_version",
        "thinking", "reasoning", "google_api_key", "top_k", "top_p", "n", "stop", "thinking_level",
        "thinking_budget", "include_thoughts", "region_name", "endpoint_url", "aws_access_key_id",
        "aws_secret_access_key", "aws_session_token", "credentials_profile_name", "beta_use_converse_api",
        "model_kwargs", "model_id", "openrouter_api_key", "openrouter_api_base", "nvidia_api_key",
        "nvidia_base_url", "groq_api_key", "mistral_api_key", "deepseek_api_key", "vllm_api_key",
    }
)  # fmt: skip
_unknown_keys_logged: set[str] = set()
#: llm_config objects whose model LlmFactory.create remembers (see there).


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    """Everything needed to build a model; hashable, so it keys the model cache.

    Secrets live only in ``headers``, which is hidden from ``repr``.
    """

    provider: str
    model_name: str
    url: str = ""
    base_url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    key_source: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    #: For ``scripted``: the whole llm_config as canonical JSON (it defines the model).
    scripted_config: str = ""
    #: Adapter options as canonical JSON (Anthropic ``thinking``, Gemini generation
    #: settings, Bedrock's Converse switch, OpenAI-compatible extra body fields…).
    options: str = ""
    #: Bedrock: (region, access key, secret key, session token, profile); hidden from repr.
    aws: tuple[str, ...] = field(default=(), repr=False)

    def option(self, name: str) -> Any:
        return json.loads(self.options).get(name) if self.options else None

    def endpoint(self) -> Endpoint:
        signer = None
        if self.aws:
            from neuro_san.llm.bedrock import SigV4Signer

            signer = SigV4Signer(*self.aws)
        return Endpoint(
            provider=self.provider,
            url=self.url,
            base_url=self.base_url,
            headers=dict(self.headers),
            key_source=self.key_source,
            timeout=self.timeout,
            max_attempts=self.max_attempts,
            signer=signer,
        )


def resolve_llm_config(
    llm_config: Mapping[str, Any], env: Mapping[str, str] | None = None, info: LlmInfo | None = None
) -> ResolvedConfig:
    """Resolve an (already merged) llm_config against ``env`` (default ``os.environ``)
    and the LLM info table ``info`` (default: the built-in one).

    Raises:
        ConfigurationError: no known provider, a missing API key or endpoint, an invalid
            number, or a ``"sly_data"`` key. The message names the key or env var to fix.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    config = dict(llm_config)
    for key, value in config.items():
        if isinstance(value, str) and value.strip().lower() == "sly_data":
            raise ConfigurationError(f'llm_config key {key!r} is "sly_data" but no request sly_data was given')
    if str(config.get("class") or "").strip().lower() != "scripted":
        config = (info or _DEFAULT_INFO).resolve(config)
    provider = _provider_of(config)
    if provider == "scripted":
        # The scripted model's own keys (its script) are not ours to judge.
        return ResolvedConfig(
            provider="scripted",
            model_name=str(config.get("model_name") or "scripted"),
            scripted_config=json.dumps(config, sort_keys=True, default=str),
        )
    _log_unknown_keys(config)
    common: dict[str, Any] = {
        "temperature": _number(config, "temperature", float),
        "max_tokens": _number(config, "max_tokens", int),
        "timeout": _timeout(config),
        "max_attempts": _max_attempts(config),
    }
    if provider == "anthropic":
        return _resolve_anthropic(config, environ, common)
    if provider == "azure-openai":
        return _resolve_azure(config, environ, common)
    if provider == "gemini":
        return resolve_gemini(config, environ, common)  # type: ignore[no-any-return]
    if provider in ("bedrock", "anthropic-bedrock"):
        return resolve_bedrock(provider, config, environ, common)  # type: ignore[no-any-return]
    if provider in COMPATIBLE:
        return resolve_compatible(provider, config, environ, common)  # type: ignore[no-any-return]
    return _resolve_openai_compatible(provider, config, environ, common)


def provider_of(config: Mapping[str, Any]) -> str:
    """The provider class of a table-resolved llm_config; ConfigurationError naming the
    model and the class when it is one this server cannot serve."""
    declared = config.get("class")
    model_name = str(config.get("model_name") or "")
    if declared:
        name = str(declared).strip().lower()
        name = _CLASS_ALIASES.get(name, name)
        if name not in PROVIDERS:
            raise ConfigurationError(
                f"llm_config for model {model_name or '(none)'!r} names class {declared!r}, which this server "
                f"cannot serve; use one of {', '.join(PROVIDERS)} (any OpenAI-compatible server works as "
                "'openai' with 'openai_api_base')"
            )
        return name
    if not model_name:
        return "openai"
    raise ConfigurationError(
        f"llm_config 'model_name' {model_name!r} is in no LLM info table and does not say which provider "
        f"serves it; add 'class' ({', '.join(PROVIDERS)}) or an AGENT_LLM_INFO_FILE entry"
    )


_provider_of = provider_of


def _resolve_openai_compatible(
    provider: str, config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]
) -> ResolvedConfig:
    extra = ""
    if provider == "ollama":
        base = _first(config, "base_url", "openai_api_base") or OLLAMA_BASE
        base = base.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        key, key_source = _first(config, "openai_api_key"), "llm_config 'openai_api_key'"
        model_name = _required_model(config, provider)
        # neuro-san's ChatOllama takes "reasoning" (think or not); Ollama's OpenAI API
        # spells the same switch reasoning_effort.
        reasoning = config.get("reasoning")
        if isinstance(reasoning, bool | str):
            effort = reasoning if isinstance(reasoning, str) else ("medium" if reasoning else "none")
            extra = json.dumps({"extra_body": {"reasoning_effort": effort}})
    else:
        base = (_first(config, "openai_api_base", "base_url") or env.get("OPENAI_API_BASE") or OPENAI_BASE).rstrip("/")
        key = _first(config, "openai_api_key") or env.get("OPENAI_API_KEY", "")
        key_source = "the OPENAI_API_KEY environment variable (or llm_config 'openai_api_key')"
        model_name = str(config.get("model_name") or DEFAULT_OPENAI_MODEL)
        if not key and not _is_local(base):
            raise ConfigurationError(f"no OpenAI API key for model {model_name!r} at {base}: set {key_source}")
    headers = [("Authorization", f"Bearer {key}")] if key else []
    organization = _first(config, "openai_organization") or env.get("OPENAI_ORG_ID", "")
    if organization:
        headers.append(("OpenAI-Organization", organization))
    return ResolvedConfig(
        provider=provider,
        model_name=model_name,
        url=f"{base}/chat/completions",
        base_url=base,
        headers=tuple(headers),
        key_source=key_source,
        options=extra,
        **common,
    )


def _resolve_azure(config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]) -> ResolvedConfig:
    endpoint = _first(config, "azure_endpoint", "openai_api_base") or env.get("AZURE_OPENAI_ENDPOINT", "")
    if not endpoint:
        raise ConfigurationError(
            "azure-openai needs an endpoint: set the AZURE_OPENAI_ENDPOINT environment "
            "variable (or llm_config 'azure_endpoint')"
        )
    deployment = (
        _first(config, "deployment_name", "azure_deployment")
        or env.get("AZURE_OPENAI_DEPLOYMENT_NAME")
        or str(config.get("model_name") or "")
    )
    if not deployment:
        raise ConfigurationError(
            "azure-openai needs a deployment: set AZURE_OPENAI_DEPLOYMENT_NAME (or llm_config "
            "'deployment_name' or 'model_name')"
        )
    version = _first(config, "openai_api_version", "api_version") or env.get("OPENAI_API_VERSION") or AZURE_API_VERSION
    key = _first(config, "openai_api_key") or env.get("AZURE_OPENAI_API_KEY", "")
    key_source = "the AZURE_OPENAI_API_KEY environment variable (or llm_config 'openai_api_key')"
    if key:
        headers = (("api-key", key),)
    elif env.get("AZURE_OPENAI_AD_TOKEN"):
        headers = (("Authorization", f"Bearer {env['AZURE_OPENAI_AD_TOKEN']}"),)
        key_source = "the AZURE_OPENAI_AD_TOKEN environment variable"
    else:
        raise ConfigurationError(f"no Azure OpenAI API key: set {key_source}")
    base = endpoint.rstrip("/")
    return ResolvedConfig(
        provider="azure-openai",
        model_name=str(config.get("model_name") or deployment),
        url=f"{base}/openai/deployments/{deployment}/chat/completions?api-version={version}",
        base_url=base,
        headers=headers,
        key_source=key_source,
        **common,
    )


def _resolve_anthropic(config: Mapping[str, Any], env: Mapping[str, str], common: dict[str, Any]) -> ResolvedConfig:
    base = (_first(config, "anthropic_api_url", "base_url") or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE).rstrip(
        "/"
    )
    model_name = _required_model(config, "anthropic")
    key = _first(config, "anthropic_api_key") or env.get("ANTHROPIC_API_KEY", "")
    key_source = "the ANTHROPIC_API_KEY environment variable (or llm_config 'anthropic_api_key')"
    if not key and not _is_local(base):
        raise ConfigurationError(f"no Anthropic API key for model {model_name!r} at {base}: set {key_source}")
    headers = [("anthropic-version", ANTHROPIC_VERSION)]
    if key:
        headers.append(("x-api-key", key))
    # The SDK's base URL has no /v1; tolerate one written by habit.
    path = "/messages" if base.endswith("/v1") else "/v1/messages"
    thinking = config.get("thinking")
    return ResolvedConfig(
        provider="anthropic",
        model_name=model_name,
        url=base + path,
        base_url=base,
        headers=tuple(headers),
        key_source=key_source,
        options=json.dumps({"thinking": dict(thinking)}, sort_keys=True) if isinstance(thinking, Mapping) else "",
        **common,
    )


def _first(config: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = config.get(key)
        if value is not None and str(value).strip():
            return str(value).strip()
    return ""


def _required_model(config: Mapping[str, Any], provider: str) -> str:
    model_name = _first(config, "model_name")
    if not model_name:
        raise ConfigurationError(f"llm_config for {provider!r} needs 'model_name'")
    return model_name


def _is_local(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "").lower() in _LOCAL_HOSTS


def _number(config: Mapping[str, Any], key: str, kind: type[int] | type[float]) -> Any:
    value = config.get(key)
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError(value)
        number = kind(value)
        if kind is int and number != float(value):
            raise ValueError(value)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"llm_config {key!r} must be {'an integer' if kind is int else 'a number'}, got {value!r}"
        ) from None
    if number < 0:
        raise ConfigurationError(f"llm_config {key!r} must not be negative, got {value!r}")
    return number


def _timeout(config: Mapping[str, Any]) -> float:
    key = "request_timeout" if config.get("request_timeout") is not None else "timeout"
    value = _number(config, key, float)
    if value is None:
        return DEFAULT_TIMEOUT
    if value <= 0:
        raise ConfigurationError(f"llm_config {key!r} must be positive, got {value!r}")
    return float(value)


def _max_attempts(config: Mapping[str, Any]) -> int:
    attempts = _number(config, "max_attempts", int)
    if attempts is None:
        retries = _number(config, "max_retries", int)
        return DEFAULT_MAX_ATTEMPTS if retries is None else int(retries) + 1
    if attempts < 1:
        raise ConfigurationError(f"llm_config 'max_attempts' must be at least 1, got {attempts}")
    return int(attempts)


def _log_unknown_keys(config: Mapping[str, Any]) -> None:
    unknown = sorted(set(config) - KNOWN_KEYS - _unknown_keys_logged)
    if unknown:
        _unknown_keys_logged.update(unknown)
        logger.debug("llm_config keys ignored by this server: %s", ", ".join(unknown))
