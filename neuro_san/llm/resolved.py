"""What a provider is: :class:`Provider` (resolve an llm_config, build its model) and
:class:`ResolvedConfig` (the resolved form, the key of the model cache).

This is the bottom of the provider layer: the provider modules
(:mod:`~neuro_san.llm.providers.openai`, :mod:`~neuro_san.llm.providers.native`), the
registry (:mod:`~neuro_san.llm.providers`) and the resolution entry point
(:mod:`~neuro_san.llm.config`) all import it, and it imports none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from neuro_san.core.errors import ConfigurationError
from neuro_san.llm.http import Endpoint, HttpPool, RequestSigner
from neuro_san.llm.interface import Model

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_ATTEMPTS = 3
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    """Everything needed to build a model; hashable, so it keys the model cache.

    Secrets live only in ``headers`` and ``aws``, which are hidden from ``repr``.
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

    def endpoint(self, signer: RequestSigner | None = None) -> Endpoint:
        """The HTTP endpoint; ``signer`` signs each request (Bedrock's SigV4)."""
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

    def settings(self) -> dict[str, Any]:
        """The model settings every adapter takes (``temperature``, ``max_tokens``)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}


#: (class name, table-resolved llm_config, environment, common settings) → resolved config.
#: The common settings (``temperature``, ``max_tokens``, ``timeout``, ``max_attempts``)
#: are parsed once for every provider and go into the ResolvedConfig as they are.
Resolve = Callable[[str, Mapping[str, Any], Mapping[str, str], dict[str, Any]], ResolvedConfig]
#: (resolved config, the llm_config it came from, the shared HTTP pool) → the model.
Build = Callable[[ResolvedConfig, Mapping[str, Any], HttpPool], Model]


@dataclass(frozen=True)
class Provider:
    """One ``llm_config`` class this server serves.

    A provider is added by registering one of these
    (:func:`neuro_san.llm.providers.register`); nothing else names providers.
    """

    name: str
    resolve: Resolve
    build: Build
    #: The llm_config keys it reads beyond the common ones (others are logged as ignored).
    keys: frozenset[str] = frozenset()
    #: Other spellings of ``class`` that mean this provider.
    aliases: tuple[str, ...] = ()
    #: Why a config cannot be served, known without secrets or the request (checked when
    #: the network loads and again at resolution), or None.
    refusal: Callable[[str, Mapping[str, Any]], str | None] | None = None
    #: The llm_config is the model's own definition: no LLM info table, no common keys.
    verbatim: bool = False


def first(config: Mapping[str, Any], *keys: str) -> str:
    """The first of ``keys`` with a non-blank value, stripped ("" when none has one)."""
    for key in keys:
        value = config.get(key)
        if value is not None and str(value).strip():
            return str(value).strip()
    return ""


def required_model(config: Mapping[str, Any], provider: str) -> str:
    model_name = first(config, "model_name")
    if not model_name:
        raise ConfigurationError(f"llm_config for {provider!r} needs 'model_name'")
    return model_name


def is_local(base_url: str) -> bool:
    """A base URL on this machine, where a server needs no API key."""
    return (urlsplit(base_url).hostname or "").lower() in _LOCAL_HOSTS
