"""Which provider class serves a bare ``model_name``: the LLM info table.

neuro-san 0.7.15 resolves an llm_config without ``class`` through its default LLM info
table (model name → class, sometimes an alias to another name), deep-merged with the
file named by ``AGENT_LLM_INFO_FILE``. This module is our own copy of that table's
*routing* facts, written from the names and classes the package resolves (model facts
such as context windows and prices are not kept), plus the same file format:

- an entry ``{"class": …}`` names the class; an alias (at most two keys, one of them
  ``use_model_name``) points at another entry, followed once; a full entry's own
  ``use_model_name`` is the name sent to the provider (``azure-gpt-4o``,
  ``nvidia-deepseek-r1``…), and so is an alias's target;
- ``classes.<name>.args`` are defaults for that class; ``classes.<name>.extends`` makes
  a new class name that is served as an existing one with its own defaults;
- ``default_config`` is laid under an llm_config that names no model.

``classes.factories`` (Python LangChain factories) cannot be served here and is refused
when the file is read, naming the file.

A model name that is in no table still resolves by prefix (``gpt-*``/``o1…``/``chatgpt-*``
→ openai, ``claude-*`` → anthropic, ``gemini-*`` → gemini), where neuro-san would
refuse it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.core.mappings import deep_merge

INFO_FILE_ENV = "AGENT_LLM_INFO_FILE"

_OPENAI = (
    "o3-mini-2025-01-31 o1-2024-12-17 gpt-6.1-sol gpt-6-astra gpt-6-sol gpt-6-luna gpt-5.6-sol gpt-5.6-terra "
    "gpt-5.6-luna gpt-5.5-pro-2026-04-23 gpt-5.5-2026-04-23 gpt-5.4-pro-2026-03-05 gpt-5.4-2026-03-05 "
    "gpt-5.4-mini-2026-03-17 gpt-5.4-nano-2026-03-17 gpt-5.2-2025-12-11 gpt-5.1-2025-11-13 gpt-5-2025-08-07 "
    "gpt-5-mini-2025-08-07 gpt-4.1-2025-04-14 gpt-4o-2024-05-13 gpt-4o-2024-08-06 gpt-4o-2024-11-20 "
    "gpt-4o-mini-2024-07-18 gpt-4-turbo-2024-04-09 gpt-4-0613 gpt-3.5-turbo-0125"
)
_ANTHROPIC = (
    "claude-haiku-4-5-20251001 claude-haiku-5-5 claude-sonnet-4-5-20250929 claude-sonnet-4-6 claude-sonnet-5 "
    "claude-sonnet-5-5 claude-opus-4-5-20251101 claude-opus-4-6 claude-opus-4-7 claude-opus-4-8 claude-opus-5 "
    "claude-opus-5-5 claude-fable-5 claude-fable-5-1"
)
_ANTHROPIC_BEDROCK = " ".join(
    "global.anthropic.claude-" + name
    for name in (
        "fable-5-1 fable-5 opus-5-5 opus-5 opus-4-8 sonnet-5-5 sonnet-5 sonnet-4-6 haiku-5-5 haiku-4-5-20251001-v1:0"
    ).split()
)
_GEMINI = (
    "gemini-4-argon gemini-3.8-flash gemini-3.7-flash gemini-3.6-flash gemini-3.5-flash gemini-3.5-flash-lite "
    "gemini-3.1-pro-preview gemini-3.1-flash-lite gemini-3.1-pro-preview-customtools gemini-3-flash-preview "
    "gemini-2.5-pro gemini-2.5-flash gemini-2.5-flash-lite"
)
_OLLAMA = "llama2 llama3 llama3:70b llama3.1 llava mistral mistral-nemo mixtral qwen2.5:14b deepseek-r1:14b llama3.3 qwen3:8b gemma4:e4b"  # noqa: E501
_OPENROUTER = "openrouter/free openrouter/auto"

#: alias → the entry it points at (and the name sent to the provider).
_ALIASES = {
    "gpt-luna": "gpt-6-luna", "gpt-terra": "gpt-5.6-terra", "gpt-sol": "gpt-6.1-sol", "gpt-astra": "gpt-6-astra",
    "o3-mini": "o3-mini-2025-01-31", "o1": "o1-2024-12-17",
    "gpt-5.5-pro": "gpt-5.5-pro-2026-04-23", "gpt-5.5": "gpt-5.5-2026-04-23",
    "gpt-5.4-pro": "gpt-5.4-pro-2026-03-05", "gpt-5.4": "gpt-5.4-2026-03-05",
    "gpt-5.4-mini": "gpt-5.4-mini-2026-03-17", "gpt-5.4-nano": "gpt-5.4-nano-2026-03-17",
    "gpt-5.2": "gpt-5.2-2025-12-11", "gpt-5.1": "gpt-5.1-2025-11-13", "gpt-5": "gpt-5-2025-08-07",
    "gpt-5-mini": "gpt-5-mini-2025-08-07", "gpt-4.1": "gpt-4.1-2025-04-14", "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18", "gpt-4-turbo": "gpt-4-turbo-2024-04-09", "gpt-4": "gpt-4-0613",
    "gpt-3.5-turbo": "gpt-3.5-turbo-0125", "gpt-3.5-turbo-16k": "gpt-3.5-turbo-0125",
    "claude-haiku": "claude-haiku-5-5", "claude-sonnet": "claude-sonnet-5-5", "claude-opus": "claude-opus-5-5",
    "claude-fable": "claude-fable-5-1", "claude-haiku-4-5": "claude-haiku-4-5-20251001",
    "claude-sonnet-4-5": "claude-sonnet-4-5-20250929", "claude-opus-4-5": "claude-opus-4-5-20251101",
    "bedrock-claude-fable": "global.anthropic.claude-fable-5-1",
    "bedrock-claude-opus": "global.anthropic.claude-opus-5-5",
    "bedrock-claude-sonnet": "global.anthropic.claude-sonnet-5-5",
    "bedrock-claude-haiku": "global.anthropic.claude-haiku-5-5",
    "gemini-3.1-pro": "gemini-3.1-pro-preview", "gemini-3.1-pro-customtools": "gemini-3.1-pro-preview-customtools",
    "gemini-3-flash": "gemini-3-flash-preview",
}  # fmt: skip
#: Full entries whose provider-side name differs from the entry's name.
_RENAMED = {
    "azure-openai": {
        "azure-gpt-3.5-turbo": "gpt-3.5-turbo-0125", "azure-gpt-5.4": "gpt-5.4-2026-03-05",
        "azure-gpt-5.4-mini": "gpt-5.4-mini-2026-03-17", "azure-gpt-5.4-nano": "gpt-5.4-nano-2026-03-17",
        "azure-gpt-5.4-pro": "gpt-5.4-pro-2026-03-05", "azure-gpt-4": "gpt-4-0613",
        "azure-gpt-4o-mini": "gpt-4o-mini-2024-07-18", "azure-gpt-4o": "gpt-4o-2024-08-06",
        "azure-gpt-4.1": "gpt-4.1-2025-04-14", "azure-o1": "o1-2024-12-17", "azure-o3-mini": "o3-mini-2025-01-31",
    },
    "nvidia": {
        "nvidia-llama-3.1-405b-instruct": "meta/llama-3.1-405b-instruct",
        "nvidia-llama-3.3-70b-instruct": "meta/llama-3.3-70b-instruct",
        "nvidia-deepseek-r1": "deepseek-ai/deepseek-r1",
    },
}  # fmt: skip
_PREFIXES = (
    (re.compile(r"^(gpt-|chatgpt-|o[134]($|-))", re.IGNORECASE), "openai"),
    (re.compile(r"^claude-", re.IGNORECASE), "anthropic"),
    (re.compile(r"^gemini-", re.IGNORECASE), "gemini"),
)


def default_table() -> dict[str, Any]:
    """The built-in table, in the info file's shape."""
    table: dict[str, Any] = {}
    for class_name, names in (
        ("openai", _OPENAI), ("anthropic", _ANTHROPIC), ("anthropic-bedrock", _ANTHROPIC_BEDROCK),
        ("gemini", _GEMINI), ("ollama", _OLLAMA), ("openrouter", _OPENROUTER),
    ):  # fmt: skip
        for name in names.split():
            table[name] = {"class": class_name}
    for class_name, renamed in _RENAMED.items():
        for name, target in renamed.items():
            table[name] = {"class": class_name, "use_model_name": target}
    for alias, target in _ALIASES.items():
        table[alias] = {"use_model_name": target}
    # The class defaults of neuro-san's table that change a request (the others are null,
    # or equal ours: max_retries 2 is our default of 3 attempts).
    table["classes"] = {"gemini": {"args": {"temperature": 0.7, "max_retries": 6}}}
    return table


@dataclass(frozen=True)
class LlmInfo:
    """The merged table. ``source`` names the info file, for messages."""

    table: Mapping[str, Any]
    source: str = "the default LLM info table"

    def classes(self) -> Mapping[str, Any]:
        classes = self.table.get("classes")
        return classes if isinstance(classes, Mapping) else {}

    def resolve(self, llm_config: Mapping[str, Any]) -> dict[str, Any]:
        """``llm_config`` with ``class`` and the provider-side ``model_name`` filled in from
        the table (class defaults laid under it), when the table knows the model."""
        config = dict(llm_config)
        if not config.get("model_name") and not config.get("class"):
            default = self.table.get("default_config")
            if isinstance(default, Mapping):
                config = {**{k: v for k, v in default.items() if v is not None}, **config}
        model_name = config.get("model_name")
        entry, use_name = self._entry(model_name) if isinstance(model_name, str) else (None, None)
        class_name = config.get("class") or (entry or {}).get("class")
        if entry is not None and (not config.get("class") or config.get("class") == entry.get("class")):
            config["model_name"] = entry.get("use_model_name", use_name)
        elif config.get("class") and isinstance(model_name, str) and model_name in self.table:
            config["model_name"] = use_name or model_name
        if class_name is None and isinstance(model_name, str):
            class_name = next((name for pattern, name in _PREFIXES if pattern.match(model_name)), None)
        if class_name is None:
            return config
        return {**self._class_defaults(str(class_name)), **config, "class": self.base_class(str(class_name))}

    def base_class(self, class_name: str) -> str:
        """The served class a user class ``extends`` (itself when it extends nothing)."""
        seen: set[str] = set()
        name = class_name
        while name not in seen:
            seen.add(name)
            spec = self.classes().get(name)
            parent = spec.get("extends") if isinstance(spec, Mapping) else None
            if not parent:
                return name
            name = str(parent)
        return name

    def _class_defaults(self, class_name: str) -> dict[str, Any]:
        chain: list[Mapping[str, Any]] = []
        name: str | None = class_name
        while name and len(chain) < 8:
            spec = self.classes().get(name)
            if not isinstance(spec, Mapping):
                break
            args = spec.get("args")
            if isinstance(args, Mapping):
                chain.append(args)
            name = spec.get("extends")
        defaults: dict[str, Any] = {}
        for args in reversed(chain):
            defaults.update({k: v for k, v in args.items() if v is not None})
        return defaults

    def _entry(self, model_name: str) -> tuple[Mapping[str, Any] | None, str]:
        entry = self.table.get(model_name)
        if not isinstance(entry, Mapping) or model_name in ("classes", "default_config"):
            return None, model_name
        use_name = str(entry.get("use_model_name") or model_name)
        if "use_model_name" in entry and len(entry) <= 2 and "class" not in entry:
            target = self.table.get(use_name)
            return (target if isinstance(target, Mapping) else None), use_name
        return entry, use_name


def load_llm_info(env: Mapping[str, str]) -> LlmInfo:
    """The default table, with ``AGENT_LLM_INFO_FILE`` (HOCON or JSON) merged over it."""
    path = (env.get(INFO_FILE_ENV) or "").strip()
    if not path:
        return LlmInfo(default_table())
    return LlmInfo(deep_merge(default_table(), read_info_file(Path(path))), f"{INFO_FILE_ENV} file {path}")


def read_info_file(path: Path) -> dict[str, Any]:
    """One LLM info file as plain data; ConfigurationError for what cannot be served."""
    try:
        if path.suffix == ".json":
            document: Any = json.loads(path.read_text(encoding="utf-8"))
        else:
            from pyhocon import ConfigFactory, HOCONConverter  # parsed once at startup

            # Quoted HOCON keys ("gpt-5.2") keep their quotes in pyhocon; drop them.
            document = _unquote_keys(json.loads(HOCONConverter.to_json(ConfigFactory.parse_file(str(path)))))
    except Exception as error:  # unreadable or unparsable: say which file
        raise ConfigurationError(f"{INFO_FILE_ENV} file {path}: cannot be read: {error}") from None
    if not isinstance(document, dict):
        raise ConfigurationError(f"{INFO_FILE_ENV} file {path}: the top level must be an object")
    classes = document.get("classes")
    if isinstance(classes, Mapping) and classes.get("factories"):
        raise ConfigurationError(
            f"{INFO_FILE_ENV} file {path}: classes.factories names Python LangChain LLM factories, "
            "which this server cannot load; declare the model with a served class instead"
        )
    return document


def _unquote_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).strip('"'): _unquote_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unquote_keys(v) for v in value]
    return value
