"""Load-time validation of an agent's ``middleware`` list, and neuro-san's own classes.

Each entry names a class by any of the paths its shipper documents, and its ``args``. The
class is looked up in :mod:`neuro_san.network.middleware_registry`; a registered class's
parser turns the args into checked settings and the entry becomes a
:class:`MiddlewareConfig`. Anything else (a class nobody registered, an unknown argument,
a ``checkpointer``, two entries that LangChain would treat as the same middleware) is a
:class:`NetworkLoadError` naming the file, the key path and the reason.

neuro-san's own classes (PII, summarisation, tool selection, network copy) are declared
and registered at the end of this module; their implementations are
:mod:`neuro_san.middleware`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.network import middleware_registry
from neuro_san.network.middleware_args import MiddlewareArgs as _Args
from neuro_san.network.middleware_registry import EntryContext, MiddlewareClass

PII_CLASSES = ("langchain.agents.middleware.PIIMiddleware", "langchain.agents.middleware.pii.PIIMiddleware")
SUMMARIZATION_CLASSES = ("neuro_san.middleware.neuro_san_summarization_middleware.NeuroSanSummarizationMiddleware",)
TOOL_SELECTION_CLASSES = ("neuro_san.middleware.llm_config_tool_selector_middleware.LlmConfigToolSelectorMiddleware",)
NETWORK_COPY_CLASSES = ("neuro_san.middleware.network_copy_middleware.NetworkCopyMiddleware",)
#: The prefix of neuro-san-studio's class paths (``middleware.…`` in a studio project).
STUDIO_PREFIX = "middleware."

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

    #: The registered class it names (its ``names[0]`` is the canonical path).
    middleware_class: MiddlewareClass
    #: The class as written.
    class_name: str
    #: The name LangChain would give the instance (duplicates are refused).
    name: str
    #: What the class's parser made of the args (a frozen dataclass of the class's own);
    #: :mod:`neuro_san.middleware.registry` builds the instance from its type.
    settings: Any


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
    middleware_class = middleware_registry.lookup(class_name)
    if middleware_class is None:
        raise NetworkLoadError(
            file, f"{key_path}.class", f"middleware {class_name!r} is not supported: {_unknown(class_name)}"
        )
    allow = entry.get("allow")
    reservations = isinstance(allow, dict) and allow.get("reservations") is True
    if reservations and not middleware_class.reservations:
        # neuro-san's own first: the message should not lead with an application's class.
        users = [c.names[0].rsplit(".", 1)[-1] for c in middleware_registry.classes() if c.reservations]
        raise NetworkLoadError(file, f"{key_path}.allow.reservations", f"only {' and '.join(users)} use it")
    settings = middleware_class.parse(_Args(args, file, f"{key_path}.args"), EntryContext(file, key_path, reservations))
    return MiddlewareConfig(middleware_class, class_name, middleware_class.instance_name(settings), settings)


def _unknown(class_name: str) -> str:
    known = ", ".join(middleware_registry.class_names())
    if class_name.startswith(STUDIO_PREFIX) and not any(
        c.origin == "neuro-san-studio" for c in middleware_registry.classes()
    ):
        # Studio's classes are an application registered by the composer; say so rather
        # than list classes that would not help.
        return (
            "neuro-san-studio's middleware classes are not registered in this process "
            "(neuro-san serve and validate register them: neuro_san.studio.plugin.register)"
        )
    return "this server implements only these middleware classes: " + known


def _network_copy(check: _Args, entry: EntryContext) -> NetworkCopySettings:
    if not entry.reservations or check.args.get("reservationist") is not True:
        raise NetworkLoadError(
            entry.file,
            f"{entry.key_path}.allow.reservations",
            'NetworkCopyMiddleware needs "allow": {"reservations": true} and "reservationist": true in its args',
        )
    check.read.add("reservationist")
    check.finish()
    return NetworkCopySettings()


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


#: neuro-san's own classes, registered when the loader is imported (it imports this module).
BUILTIN_CLASSES = (
    MiddlewareClass(PII_CLASSES, lambda check, entry: _pii(check), lambda s: f"PIIMiddleware[{s.pii_type}]"),
    MiddlewareClass(
        SUMMARIZATION_CLASSES, lambda check, entry: _summarization(check), lambda s: "SummarizationMiddleware"
    ),
    MiddlewareClass(
        TOOL_SELECTION_CLASSES, lambda check, entry: _tool_selection(check), lambda s: "LLMToolSelectorMiddleware"
    ),
    MiddlewareClass(NETWORK_COPY_CLASSES, _network_copy, lambda s: "NetworkCopyMiddleware", reservations=True),
)
for _builtin in BUILTIN_CLASSES:
    middleware_registry.register(_builtin)
