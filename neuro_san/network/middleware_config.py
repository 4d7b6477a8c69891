"""Load-time validation of an agent's ``middleware`` list.

Each entry names a class neuro-san ships (by any of the paths neuro-san documents) and
its ``args``. Entries for classes this server implements become :class:`MiddlewareConfig`
objects with checked settings; anything else (another class, an unknown argument, a
``checkpointer``, two entries that LangChain would treat as the same middleware) is a
:class:`NetworkLoadError` naming the file, the key path and the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.network.middleware_args import MiddlewareArgs as _Args
from neuro_san.network.studio_config import (
    PERSISTENCE_CLASS,
    STUDIO_CLASSES,
    StudioSettings,
    parse_studio,
)
from neuro_san.network.studio_config import REFUSED as STUDIO_REFUSED

PII_CLASSES = frozenset(
    {"langchain.agents.middleware.PIIMiddleware", "langchain.agents.middleware.pii.PIIMiddleware"}
)
SUMMARIZATION_CLASSES = frozenset(
    {"neuro_san.middleware.neuro_san_summarization_middleware.NeuroSanSummarizationMiddleware"}
)
TOOL_SELECTION_CLASSES = frozenset(
    {"neuro_san.middleware.llm_config_tool_selector_middleware.LlmConfigToolSelectorMiddleware"}
)
NETWORK_COPY_CLASSES = frozenset({"neuro_san.middleware.network_copy_middleware.NetworkCopyMiddleware"})
#: Classes neuro-san (and neuro-san-studio) ship that this server does not implement, and why.
REFUSED_CLASSES: Mapping[str, str] = STUDIO_REFUSED

BUILTIN_PII_TYPES = frozenset({"email", "credit_card", "ip", "mac_address", "url"})
PII_STRATEGIES = frozenset({"block", "redact", "mask", "hash"})
ENTRY_KEYS = frozenset({"class", "args", "allow"})


@dataclass(frozen=True, slots=True)
class PiiSettings:
    pii_type: str
    #: A regex; None for the built-in detector of ``pii_type``.
    detector: str | None
    strategy: str
    apply_to_input: bool
    apply_to_output: bool
    apply_to_tool_results: bool


@dataclass(frozen=True, slots=True)
class Threshold:
    """``["messages", n]``, ``["tokens", n]`` or ``["fraction", f]``."""

    unit: str
    value: float


@dataclass(frozen=True, slots=True)
class SummarizationSettings:
    #: The model name for the summary call; None: the agent's own model.
    model: str | None
    #: Summarise when any of these is reached (empty: never).
    trigger: tuple[Threshold, ...]
    keep: Threshold
    keep_summary_in_context: bool
    summary_prompt: str | None
    trim_tokens_to_summarize: int | None


@dataclass(frozen=True, slots=True)
class ToolSelectionSettings:
    #: The selector's llm_config (over the agent's), ``fallbacks`` included.
    llm_config: Mapping[str, Any]
    system_prompt: str | None
    max_tools: int | None
    always_include: tuple[str, ...]
    unadvertised_policy: str


@dataclass(frozen=True, slots=True)
class NetworkCopySettings:
    """NetworkCopyMiddleware has no settings of its own (its args ask for injections)."""


@dataclass(frozen=True, slots=True)
class MiddlewareConfig:
    """One validated ``middleware`` entry."""

    #: ``pii`` or ``summarization``.
    kind: str
    #: The class as written.
    class_name: str
    #: The name LangChain would give the instance (duplicates are refused).
    name: str
    settings: (
        PiiSettings | SummarizationSettings | ToolSelectionSettings | NetworkCopySettings | StudioSettings
    )


def parse_middleware(raw: Any, file: str, key_path: str) -> tuple[MiddlewareConfig, ...]:
    """The validated entries of an agent's ``middleware`` value (None: none)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise NetworkLoadError(file, key_path, f"must be a list of middleware entries, not {type_name(raw)}")
    configs: list[MiddlewareConfig] = []
    for index, entry in enumerate(raw):
        config = _entry(entry, file, f"{key_path}[{index}]")
        for earlier in configs:
            if earlier.name == config.name:
                raise NetworkLoadError(
                    file,
                    f"{key_path}[{index}]",
                    f"a second {config.name} entry: one agent may use each middleware once "
                    "(neuro-san 0.7.15 hangs the request on this)",
                )
        configs.append(config)
    return tuple(configs)


def _entry(entry: Any, file: str, key_path: str) -> MiddlewareConfig:
    if not isinstance(entry, dict):
        raise NetworkLoadError(file, key_path, f"a middleware entry must be a dict, not {type_name(entry)}")
    class_name = entry.get("class")
    if not isinstance(class_name, str) or not class_name:
        raise NetworkLoadError(file, f"{key_path}.class", "missing: name the middleware class")
    for key in entry:
        if key == "checkpointer":
            raise NetworkLoadError(file, f"{key_path}.checkpointer", "LangChain checkpointers are not supported")
        if key not in ENTRY_KEYS:
            raise NetworkLoadError(file, f"{key_path}.{key}", "unknown key of a middleware entry")
    args = entry.get("args") or {}
    if not isinstance(args, dict):
        raise NetworkLoadError(file, f"{key_path}.args", f"must be a dict, not {type_name(args)}")
    known = PII_CLASSES | SUMMARIZATION_CLASSES | TOOL_SELECTION_CLASSES | NETWORK_COPY_CLASSES | STUDIO_CLASSES
    if class_name not in known:
        reason = REFUSED_CLASSES.get(class_name) or (
            "this server implements only these middleware classes: " + ", ".join(sorted(known))
        )
        raise NetworkLoadError(file, f"{key_path}.class", f"middleware {class_name!r} is not supported: {reason}")
    allow = entry.get("allow")
    reservations = isinstance(allow, dict) and allow.get("reservations") is True
    check = _Args(args, file, f"{key_path}.args")
    if class_name in NETWORK_COPY_CLASSES:
        if not reservations or args.get("reservationist") is not True:
            raise NetworkLoadError(
                file,
                f"{key_path}.allow.reservations",
                'NetworkCopyMiddleware needs "allow": {"reservations": true} and "reservationist": true in its args',
            )
        check.read.add("reservationist")
        check.finish()
        return MiddlewareConfig("network_copy", class_name, "NetworkCopyMiddleware", NetworkCopySettings())
    if reservations and class_name != PERSISTENCE_CLASS:
        raise NetworkLoadError(
            file, f"{key_path}.allow.reservations", "only NetworkCopyMiddleware and the designer's persistence use it"
        )
    if class_name in STUDIO_CLASSES:
        studio = parse_studio(class_name, check, reservations=reservations)
        return MiddlewareConfig("studio", class_name, class_name.rsplit(".", 1)[-1], studio)
    if class_name in PII_CLASSES:
        pii = _pii(check)
        return MiddlewareConfig("pii", class_name, f"PIIMiddleware[{pii.pii_type}]", pii)
    if class_name in SUMMARIZATION_CLASSES:
        return MiddlewareConfig("summarization", class_name, "SummarizationMiddleware", _summarization(check))
    return MiddlewareConfig("tool_selection", class_name, "LLMToolSelectorMiddleware", _tool_selection(check))


def _pii(check: _Args) -> PiiSettings:
    pii_type = check.get("pii_type", None, lambda v: isinstance(v, str) and v != "", "a non-empty string")
    if pii_type is None:
        raise check.fail("pii_type", "missing: name the PII (email, credit_card, ip, mac_address, url or your own)")
    detector = check.get("detector", None, lambda v: isinstance(v, str), "a regular expression string")
    if detector is not None:
        try:
            re.compile(detector)
        except re.error as error:
            raise check.fail("detector", f"not a valid regular expression: {error}") from None
    elif pii_type not in BUILTIN_PII_TYPES:
        raise check.fail("detector", f"missing: {pii_type!r} is not a built-in PII type, so give a regex")
    strategy = check.get("strategy", "redact", lambda v: v in PII_STRATEGIES, "one of block, redact, mask, hash")
    settings = PiiSettings(
        pii_type=pii_type,
        detector=detector,
        strategy=strategy,
        apply_to_input=check.flag("apply_to_input", True),
        apply_to_output=check.flag("apply_to_output", False),
        apply_to_tool_results=check.flag("apply_to_tool_results", False),
    )
    check.finish()
    return settings


def _summarization(check: _Args) -> SummarizationSettings:
    model = check.get("model", None, lambda v: isinstance(v, str) and v != "", "a model name")
    raw_trigger = check.get(
        "trigger", None, lambda v: isinstance(v, list), 'a pair like ["messages", 3] or a list of pairs'
    )
    trigger: tuple[Threshold, ...] = ()
    if raw_trigger is not None:
        pairs = raw_trigger if raw_trigger and isinstance(raw_trigger[0], list) else [raw_trigger]
        trigger = tuple(_threshold(pair, check, "trigger") for pair in pairs)
    raw_keep = check.get("keep", ["messages", 4], lambda v: isinstance(v, list), 'a pair like ["messages", 4]')
    trim = check.get(
        "trim_tokens_to_summarize", 3000, lambda v: v is None or (isinstance(v, int) and v > 0), "a positive integer"
    )
    if "token_counter" in check.args:
        raise check.fail("token_counter", "custom token counters are not supported (tokens are estimated)")
    settings = SummarizationSettings(
        model=model,
        trigger=trigger,
        keep=_threshold(raw_keep, check, "keep"),
        keep_summary_in_context=check.flag("keep_summary_in_context", True),
        summary_prompt=check.get("summary_prompt", None, lambda v: isinstance(v, str), "a string"),
        trim_tokens_to_summarize=trim,
    )
    check.finish()
    return settings


def _threshold(pair: Any, check: _Args, key: str) -> Threshold:
    if (
        isinstance(pair, list)
        and len(pair) == 2
        and pair[0] in ("messages", "tokens", "fraction")
        and isinstance(pair[1], int | float)
        and not isinstance(pair[1], bool)
        and pair[1] > 0
    ):
        if pair[0] == "fraction":
            raise check.fail(key, '"fraction" thresholds need the model\'s context size, which is not known here')
        return Threshold(pair[0], float(pair[1]))
    raise check.fail(key, f'must be ["messages", n] or ["tokens", n] with n > 0, not {pair!r}')


def _tool_selection(check: _Args) -> ToolSelectionSettings:
    llm_config = check.get("llm_config", None, lambda v: isinstance(v, dict), "an llm_config dict")
    if llm_config is None:
        raise check.fail("llm_config", "missing: the selector needs an llm_config")
    fallbacks = llm_config.get("fallbacks")
    if fallbacks is not None and not (
        isinstance(fallbacks, list) and fallbacks and all(isinstance(f, dict) for f in fallbacks)
    ):
        raise check.fail("llm_config.fallbacks", "must be a non-empty list of llm_config dicts")
    always = check.get(
        "always_include", [], lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v), "a list of names"
    )
    settings = ToolSelectionSettings(
        llm_config=MappingProxyType(dict(llm_config)),
        system_prompt=check.get("system_prompt", None, lambda v: isinstance(v, str), "a string"),
        max_tools=check.get(
            "max_tools", None, lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0, "a positive integer"
        ),
        always_include=tuple(always),
        unadvertised_policy=check.get(
            "unadvertised_policy", "allow", lambda v: v in ("allow", "deny"), "allow or deny"
        ),
    )
    check.finish()
    return settings
